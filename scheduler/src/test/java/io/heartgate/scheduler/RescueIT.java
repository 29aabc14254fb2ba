package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node whose server hangs (SIGSTOP: the kernel still accepts connections, nothing answers) under
 * load: the requests waiting on it are moved to the other node as soon as the table stops routing
 * it, from its agent's DOWN heartbeat or, with the agent killed too, from its expiry; none fails.
 * The hung server and its agent are real processes (the packaged jars).
 */
@ExtendWith(KafkaExtension.class)
class RescueIT {

    private static final Path SIM_JAR = Path.of("..", "inference-sim", "target", "inference-sim.jar");
    private static final Path AGENT_JAR = Path.of("..", "heartbeat-agent", "target", "heartbeat-agent.jar");
    private static final long INTERVAL_MS = 500;
    /** The deadline: two agent intervals and a second after the stop. */
    private static final long DEADLINE_MS = 2 * INTERVAL_MS + 1000;
    /** The longest a request takes on a healthy node here (100 ms to the first token, 8 x 20 ms), with room. */
    private static final long SERVICE_MS = 1000;

    @TempDir
    Path dir;

    private Cluster cluster;
    private Process sim;
    private Process agent;
    private ChatLoad load;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        Assumptions.assumeTrue(Files.exists(SIM_JAR) && Files.exists(AGENT_JAR),
                "the packaged simulator and agent (mvn verify builds them before the scheduler)");
        cluster = new Cluster(kafka.bootstrapServers());
        Path simLog = dir.resolve("sim.log");
        sim = java(simLog, "-jar", SIM_JAR.toString(), "--name", "gpu-hang", "--port", "0", "--models", "llama3:8b",
                "--tokens", "8", "--token-delay", "20ms", "--first-token-delay", "100ms", "--max-concurrency", "64");
        int port = ProcessLogs.port(simLog, "inference-sim listening on [^:]+:(\\d+)");
        agent = java(dir.resolve("agent.log"), "-Xmx96m", "-jar", AGENT_JAR.toString(), "--kafka",
                kafka.bootstrapServers(), "--topic", cluster.topic, "--node-id", "gpu-hang", "--url",
                "http://127.0.0.1:" + port, "--backend", "ollama", "--interval", INTERVAL_MS + "ms",
                "--probe-timeout", "300ms", "--nvidia-smi", "/nonexistent/nvidia-smi");
        Cluster.SimNode ok = cluster.sim("gpu-ok", c -> c.timing(8, Duration.ofMillis(20), Duration.ofMillis(100)));
        cluster.heartbeat("gpu-ok", ok.url(), b -> b.models(List.of("llama3:8b")));
        cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN)); // the default transport

        await().atMost(Duration.ofSeconds(30)).until(() -> cluster.scheduler.table().snapshot().routable().size() == 2);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (load != null) {
            load.close();
        }
        for (Process p : new Process[] {sim, agent}) {
            if (p != null) {
                signal("CONT", p);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    private static Process java(Path log, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m", "-XX:+UseSerialGC"));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    private static void signal(String name, Process p) throws Exception {
        if (p.isAlive()) {
            new ProcessBuilder("kill", "-" + name, String.valueOf(p.pid())).start().waitFor(5, TimeUnit.SECONDS);
        }
    }


    /** Runs the load, hangs the server at T0 (and kills its agent when asked), and checks every request. */
    private void hangUnderLoad(boolean killAgentToo) throws Exception {
        load = new ChatLoad(cluster, 8); // as in the trial
        await().atMost(Duration.ofSeconds(30)).until(() -> load.servedBy("gpu-hang") >= 10 && load.servedBy("gpu-ok") >= 10);

        long stopped = System.nanoTime();
        signal("STOP", sim);
        if (killAgentToo) {
            agent.destroyForcibly(); // SIGKILL: no tombstone, the node must expire
        }
        long deadline = stopped + TimeUnit.MILLISECONDS.toNanos(DEADLINE_MS);
        // Enough time for every request in flight at the stop to be answered, and load after it.
        await().atMost(Duration.ofSeconds(20)).until(() -> load.startedAfter(deadline) >= 20);
        load.stop();

        load.printFailures("rescue-it", stopped);
        List<ChatLoad.Result> results = load.results();
        assertThat(results).as("failed requests").allSatisfy(r -> assertThat(r.status()).isEqualTo(200));
        List<ChatLoad.Result> affected = results.stream().filter(r -> r.endNanos() > stopped && r.startNanos() < deadline).toList();
        for (ChatLoad.Result r : affected) {
            long endMs = TimeUnit.NANOSECONDS.toMillis(r.endNanos() - stopped);
            long latestMs = Math.max(DEADLINE_MS, TimeUnit.NANOSECONDS.toMillis(r.startNanos() - stopped)) + SERVICE_MS;
            assertThat(endMs).as("a request in flight during the hang ended %d ms after the stop", endMs)
                    .isLessThanOrEqualTo(latestMs);
        }
        assertThat(results.stream().filter(r -> r.startNanos() > deadline).map(ChatLoad.Result::node))
                .as("after the deadline only the healthy node answers").containsOnly("gpu-ok");
        assertThat(cluster.scheduler.proxyCounters().get(Counter.RESCUED)).as("requests moved off the hung node")
                .isPositive();
        assertThat(cluster.scheduler.proxyCounters().errors(ErrorType.UPSTREAM_TIMEOUT))
                .isZero();
    }

    @Test
    void requestsWaitingOnAHungServerMoveWhenItsAgentSaysDown() throws Exception {
        hangUnderLoad(false);
        assertThat(cluster.scheduler.table().snapshot().node("gpu-hang").state())
                .isEqualTo(NodeState.DOWN);
    }

    @Test
    void requestsWaitingOnAHungServerMoveWhenItExpiresWithItsAgentKilledToo() throws Exception {
        hangUnderLoad(true);
        assertThat(cluster.scheduler.table().snapshot().node("gpu-hang")).as("expired").isNull();
    }
}
