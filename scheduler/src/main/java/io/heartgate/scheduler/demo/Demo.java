package io.heartgate.scheduler.demo;

import io.heartgate.agent.AgentConfig;
import io.heartgate.agent.AgentRuntime;
import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.sim.Faults;
import io.heartgate.sim.SimConfig;
import io.heartgate.sim.SimServer;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the demo's simulated GPU nodes, each with its own heartbeat agent publishing through Kafka,
 * exactly as real nodes would: nothing bypasses the heartbeat path. Nodes differ in speed, weight
 * and models so every strategy has something to show. {@link #close()} stops the agents first
 * (their tombstones remove the nodes at once), then the simulators.
 */
public final class Demo implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Demo.class);

    /** What demo node {@code i} looks like: models, speed and weight cycle through these. */
    private static final List<List<String>> MODELS = List.of(
            List.of("llama3:8b", "qwen2.5:7b"), List.of("llama3:8b"), List.of("llama3:8b", "mistral:7b"));
    private static final int[] TOKEN_DELAY_MS = {15, 30, 60};
    private static final int[] WEIGHTS = {3, 2, 1};

    /** One demo node: its id, URL and the models it serves. */
    public record DemoNode(String id, String url, List<String> models, int weight, int tokenDelayMs) {
    }

    private final Vertx vertx;
    private final List<AgentRuntime> agents;
    private final List<DemoNode> nodes;

    private Demo(Vertx vertx, List<AgentRuntime> agents, List<DemoNode> nodes) {
        this.vertx = vertx;
        this.agents = agents;
        this.nodes = nodes;
    }

    /** Starts {@code n} simulated nodes on free loopback ports and their agents, publishing to {@code kafka}. */
    public static Demo start(int n, String kafka, String topic, Clock clock) {
        return start(n, kafka, topic, clock, KafkaSettings.NONE, null);
    }

    /**
     * Starts {@code n} demo nodes whose agents use {@code kafkaClient} (a secured broker's client
     * properties) and sign with {@code signing} (or not, when {@code null}).
     */
    public static Demo start(int n, String kafka, String topic, Clock clock, KafkaSettings kafkaClient,
                             HeartbeatKeys signing) {
        Vertx vertx = Vertx.vertx();
        List<AgentRuntime> agents = new ArrayList<>();
        List<DemoNode> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                String id = "demo-gpu-" + (i + 1);
                List<String> models = MODELS.get(i % MODELS.size());
                int delay = TOKEN_DELAY_MS[i % TOKEN_DELAY_MS.length];
                int weight = WEIGHTS[i % WEIGHTS.length];
                SimConfig config = new SimConfig(id, "127.0.0.1", 0, models, 48, Duration.ofMillis(delay),
                        Duration.ofMillis(150), 4, 256, 16, Faults.NONE, null);
                SimServer sim = new SimServer(config, clock, System::nanoTime);
                vertx.deployVerticle(sim).await(30, TimeUnit.SECONDS);
                String url = "http://127.0.0.1:" + sim.port();
                agents.add(AgentRuntime.start(new AgentConfig(kafka, topic, id, url, url, Backend.OLLAMA, weight, null,
                        Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(5), "nvidia-smi", false, false,
                        kafkaClient, signing), clock));
                nodes.add(new DemoNode(id, url, models, weight, delay));
            }
            return new Demo(vertx, agents, nodes);
        } catch (Exception e) {
            agents.forEach(AgentRuntime::close);
            vertx.close();
            throw new IllegalStateException("demo nodes failed to start: " + e.getMessage(), e);
        }
    }

    /** How long {@link #awaitRoutable} waits for the nodes' first heartbeats. */
    private static final Duration READY_WITHIN = Duration.ofSeconds(15);

    /**
     * Waits until {@code routable} counts every demo node, at most 15 s, so that the commands the
     * banner prints work the moment they are shown; the demo goes on either way.
     */
    public void awaitRoutable(IntSupplier routable) throws InterruptedException {
        long end = System.nanoTime() + READY_WITHIN.toNanos();
        while (routable.getAsInt() < nodes.size() && System.nanoTime() < end) {
            Thread.sleep(50);
        }
    }

    /** Returns what to try against the demo: its nodes, streams through {@code proxy}, the dashboard at {@code admin}, a fault. */
    public String banner(String proxy, String admin, String kafka, String strategy) {
        StringBuilder sb = new StringBuilder();
        sb.append("\nHeartgate demo: ").append(nodes.size()).append(" simulated GPU nodes, each with its agent ")
                .append("publishing heartbeats through Kafka ").append(kafka).append('\n');
        for (DemoNode n : nodes) {
            sb.append(String.format("  %-11s %s  weight %d, %3d ms/token, models %s%n", n.id(), n.url(), n.weight(),
                    n.tokenDelayMs(), n.models()));
        }
        sb.append("\nStream tokens through the scheduler (strategy ").append(strategy).append("):\n\n");
        sb.append("  curl -N ").append(proxy).append(Endpoint.OLLAMA_GENERATE.path())
                .append(" -d '{\"model\": \"llama3:8b\", \"prompt\": \"Why is the sky blue?\"}'\n\n");
        sb.append("  curl -N ").append(proxy).append(Endpoint.OPENAI_CHAT.path())
                .append(" -H 'Content-Type: application/json' \\\n")
                .append("    -d '{\"model\": \"llama3:8b\", \"stream\": true, \"messages\": [{\"role\": \"user\", ")
                .append("\"content\": \"Hello\"}]}'\n\n");
        sb.append("The X-Upstream-Node header (curl -i) and the first token name the node that answered.\n");
        sb.append("Dashboard: ").append(admin).append("/   nodes: ").append(admin).append("/admin/nodes   ready: ")
                .append(admin).append("/readyz\n");
        DemoNode first = nodes.get(0);
        sb.append("\nFreeze ").append(first.id()).append(" as a GPU driver fault would (its agent reports it DOWN, ")
                .append("requests waiting on it move to another node; DELETE undoes it):\n\n");
        sb.append("  curl -X POST ").append(first.url())
                .append("/sim/faults -d '{\"hang\": true, \"failHealth\": true}'\n\n");
        sb.append("Press Ctrl-C to stop everything.\n");
        return sb.toString();
    }

    /** Returns the nodes started. */
    public List<DemoNode> nodes() {
        return nodes;
    }

    /** Stops the agents (tombstones first, so the nodes leave at once), then the simulators. */
    @Override
    public void close() {
        // In parallel: each agent waits for its tombstone's acknowledgement.
        agents.parallelStream().forEach(AgentRuntime::close);
        try {
            vertx.close().await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            log.warn("Demo nodes did not stop cleanly: {}", e.toString());
        }
        log.info("Demo nodes stopped");
    }
}
