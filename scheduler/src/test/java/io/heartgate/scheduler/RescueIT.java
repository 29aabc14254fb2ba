package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
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
    private static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    @TempDir
    Path dir;

    private record Result(long startNanos, long endNanos, int status, String node) {
    }

    private Cluster cluster;
    private Process sim;
    private Process agent;
    private final List<Result> results = new CopyOnWriteArrayList<>();
    private final AtomicBoolean loading = new AtomicBoolean(true);
    private ExecutorService clients;

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
        loading.set(false);
        if (clients != null) {
            clients.shutdownNow();
            clients.awaitTermination(10, TimeUnit.SECONDS);
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


    /** Eight clients sending small chats back to back, as in the trial. */
    private void startLoad() {
        clients = Executors.newFixedThreadPool(8);
        for (int i = 0; i < 8; i++) {
            clients.submit(() -> {
                while (loading.get()) {
                    long start = System.nanoTime();
                    int status;
                    String node = null;
                    try {
                        HttpResponse<String> r = cluster.http.send(HttpRequest.newBuilder(cluster.proxy("/v1/chat/completions"))
                                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(CHAT)).build(),
                                HttpResponse.BodyHandlers.ofString());
                        status = r.statusCode();
                        node = r.headers().firstValue("x-upstream-node").orElse(null);
                    } catch (Exception e) {
                        status = -1;
                        node = e.toString();
                    }
                    results.add(new Result(start, System.nanoTime(), status, node));
                }
                return null;
            });
        }
    }

    private long servedBy(String node) {
        return results.stream().filter(r -> node.equals(r.node())).count();
    }

    /** Runs the load, hangs the server at T0 (and kills its agent when asked), and checks every request. */
    private void hangUnderLoad(boolean killAgentToo) throws Exception {
        startLoad();
        await().atMost(Duration.ofSeconds(30)).until(() -> servedBy("gpu-hang") >= 10 && servedBy("gpu-ok") >= 10);

        long stopped = System.nanoTime();
        signal("STOP", sim);
        if (killAgentToo) {
            agent.destroyForcibly(); // SIGKILL: no tombstone, the node must expire
        }
        long deadline = stopped + TimeUnit.MILLISECONDS.toNanos(DEADLINE_MS);
        // Enough time for every request in flight at the stop to be answered, and load after it.
        await().atMost(Duration.ofSeconds(20)).until(() -> results.stream()
                .filter(r -> r.startNanos() > deadline).count() >= 20);
        loading.set(false);
        clients.shutdown();
        assertThat(clients.awaitTermination(30, TimeUnit.SECONDS)).isTrue();

        for (Result r : results) {
            if (r.status() != 200) {
                System.out.printf("[rescue-it] failed: start %+d ms, end %+d ms after the stop: %s%n",
                        TimeUnit.NANOSECONDS.toMillis(r.startNanos() - stopped),
                        TimeUnit.NANOSECONDS.toMillis(r.endNanos() - stopped), r.node());
            }
        }
        assertThat(results).as("failed requests").allSatisfy(r -> assertThat(r.status()).isEqualTo(200));
        List<Result> affected = results.stream().filter(r -> r.endNanos() > stopped && r.startNanos() < deadline).toList();
        for (Result r : affected) {
            long endMs = TimeUnit.NANOSECONDS.toMillis(r.endNanos() - stopped);
            long latestMs = Math.max(DEADLINE_MS, TimeUnit.NANOSECONDS.toMillis(r.startNanos() - stopped)) + SERVICE_MS;
            assertThat(endMs).as("a request in flight during the hang ended %d ms after the stop", endMs)
                    .isLessThanOrEqualTo(latestMs);
        }
        assertThat(results.stream().filter(r -> r.startNanos() > deadline).map(Result::node))
                .as("after the deadline only the healthy node answers").containsOnly("gpu-ok");
        assertThat(cluster.scheduler.proxyCounters().get(Counter.RESCUED)).as("requests moved off the hung node")
                .isPositive();
        assertThat(cluster.scheduler.proxyCounters().errors(io.heartgate.scheduler.proxy.policy.ErrorType.UPSTREAM_TIMEOUT))
                .isZero();
    }

    @Test
    void requestsWaitingOnAHungServerMoveWhenItsAgentSaysDown() throws Exception {
        hangUnderLoad(false);
        assertThat(cluster.scheduler.table().snapshot().node("gpu-hang").state())
                .isEqualTo(io.heartgate.protocol.NodeState.DOWN);
    }

    @Test
    void requestsWaitingOnAHungServerMoveWhenItExpiresWithItsAgentKilledToo() throws Exception {
        hangUnderLoad(true);
        assertThat(cluster.scheduler.table().snapshot().node("gpu-hang")).as("expired").isNull();
    }
}
