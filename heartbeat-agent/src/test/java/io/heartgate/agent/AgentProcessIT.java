package io.heartgate.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Runs the real agent jar as a child JVM, configured through environment variables only. */
@ExtendWith(KafkaExtension.class)
class AgentProcessIT {

    @Test
    void sigtermPublishesATombstoneAndExitsZeroWithinTwoSeconds(TestKafka kafka, @TempDir Path dir) throws Exception {
        Path jar = Path.of("target", "heartbeat-agent.jar");
        assertThat(jar).as("the packaged agent (run through mvn verify)").exists();
        Vertx vertx = Vertx.vertx();
        SimServer sim = new SimServer(new SimConfigBuilder("sim-p", List.of("llama3:8b")).build(), Clock.systemUTC(),
                System::nanoTime);
        vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
        String topic = "agent-process-" + UUID.randomUUID();
        Process agent = null;
        try (HeartbeatTail tail = new HeartbeatTail(kafka.bootstrapServers(), topic)) {
            ProcessBuilder pb = new ProcessBuilder(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx128m",
                    "-jar", jar.toString())
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("agent.log").toFile());
            Map<String, String> env = pb.environment();
            env.put("KAFKA_BOOTSTRAP_SERVERS", kafka.bootstrapServers());
            env.put("HEARTBEAT_TOPIC", topic);
            env.put("NODE_ID", "gpu-proc");
            env.put("NODE_URL", "http://127.0.0.1:" + sim.port());
            env.put("HEARTBEAT_INTERVAL", "200ms");
            env.put("AGENT_NVIDIA_SMI", "/nonexistent/nvidia-smi");
            agent = pb.start();

            HeartbeatTail.Seen first = tail.awaitMatching(0, s -> s.beat().isPresent(), Duration.ofSeconds(30));
            assertThat(first.beat().orElseThrow().nodeId()).isEqualTo("gpu-proc");
            assertThat(first.beat().orElseThrow().intervalMs()).isEqualTo(200);

            long signalled = System.nanoTime();
            agent.destroy(); // SIGTERM
            boolean exited = agent.waitFor(5, TimeUnit.SECONDS);
            long tookMs = (System.nanoTime() - signalled) / 1_000_000;
            String log = Files.readString(dir.resolve("agent.log"));
            System.out.printf("[heartgate-test] agent exited %d ms after SIGTERM%n", tookMs);

            assertThat(exited).as(log).isTrue();
            assertThat(agent.exitValue()).as(log).isZero();
            assertThat(tookMs).as(log).isLessThanOrEqualTo(2_000);
            HeartbeatTail.Seen leave = tail.awaitMatching(0, s -> s.decoded() instanceof Decoded.Leave,
                    Duration.ofSeconds(10));
            assertThat(leave.decoded()).isEqualTo(new Decoded.Leave("gpu-proc"));
            assertThat(log).contains("Agent for node gpu-proc advertising http://127.0.0.1:" + sim.port());
        } finally {
            if (agent != null) {
                agent.destroyForcibly();
            }
            vertx.close().await(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void onceProbesAndPrintsTheHeartbeatAsJson(@TempDir Path dir) throws Exception {
        Vertx vertx = Vertx.vertx();
        SimServer sim = new SimServer(new SimConfigBuilder("sim-o", List.of("m1", "m2")).build(), Clock.systemUTC(),
                System::nanoTime);
        vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
        try {
            File out = dir.resolve("out.json").toFile();
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-jar", Path.of("target", "heartbeat-agent.jar").toString(), "--once",
                    "--url", "http://127.0.0.1:" + sim.port(), "--node-id", "gpu-once", "--backend", "vllm",
                    "--nvidia-smi", "/nonexistent/nvidia-smi", "--log-format", "json")
                    .redirectOutput(out)
                    .redirectError(dir.resolve("err.log").toFile())
                    .start();
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).isZero();

            // Logs went to stderr, one JSON object per line; stdout holds only the heartbeat.
            List<String> logLines = Files.readAllLines(dir.resolve("err.log"));
            assertThat(logLines).isNotEmpty().allSatisfy(line ->
                    assertThat(new JsonObject(line).getString("level")).isNotBlank());
            assertThat(logLines).anyMatch(l -> l.contains("Node gpu-once"));
            Decoded decoded = new HeartbeatCodec().decode(Files.readAllBytes(out.toPath()));
            assertThat(decoded).isInstanceOfSatisfying(Decoded.Beat.class, b -> {
                assertThat(b.heartbeat().nodeId()).isEqualTo("gpu-once");
                assertThat(b.heartbeat().models()).containsExactly("m1", "m2");
                assertThat(b.heartbeat().load().inFlight()).isZero();
            });
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
        }
    }
}
