package io.heartgate.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.protocol.NodeState;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.Vertx;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(KafkaExtension.class)
class AgentIT {

    private final HttpClient http = HttpClient.newHttpClient();
    private Vertx vertx;
    private SimServer sim;
    private AgentRuntime agent;
    private HeartbeatTail tail;

    @BeforeEach
    void startSim() throws Exception {
        vertx = Vertx.vertx();
        sim = new SimServer(new SimConfigBuilder("sim-a", List.of("llama3:8b", "qwen2.5:7b"))
                .timing(100_000, Duration.ofMillis(20), Duration.ofMillis(1)).build(),
                Clock.systemUTC(), System::nanoTime);
        vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
    }

    @AfterEach
    void stopAll() throws Exception {
        if (agent != null) {
            agent.close();
        }
        if (tail != null) {
            tail.close();
        }
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    private void startAgent(TestKafka kafka, Backend backend, Duration interval) throws Exception {
        startAgent(kafka, backend, interval, sim);
    }

    private void startAgent(TestKafka kafka, Backend backend, Duration interval, SimServer target) throws Exception {
        String topic = "agent-it-" + UUID.randomUUID();
        tail = new HeartbeatTail(kafka.bootstrapServers(), topic);
        String url = "http://127.0.0.1:" + target.port();
        agent = AgentRuntime.start(new AgentConfig(kafka.bootstrapServers(), topic, "gpu-" + backend.label(), url, url,
                backend, 3, null, interval, Duration.ofSeconds(2), Duration.ofSeconds(5),
                "/nonexistent/nvidia-smi", false, false), Clock.systemUTC());
    }

    @Test
    void ollamaFlavourHeartbeatsArriveAtTheIntervalWithTheSimsModels(TestKafka kafka) throws Exception {
        startAgent(kafka, Backend.OLLAMA, Duration.ofMillis(200));

        List<HeartbeatTail.Seen> seen = tail.awaitCount(11, Duration.ofSeconds(20));

        assertIntervalWithin20Percent(seen, 200);
        Heartbeat hb = seen.get(10).beat().orElseThrow();
        assertThat(hb.nodeId()).isEqualTo("gpu-ollama");
        assertThat(hb.state()).isEqualTo(NodeState.UP);
        assertThat(hb.backend()).isEqualTo("ollama");
        assertThat(hb.models()).containsExactly("llama3:8b", "qwen2.5:7b");
        assertThat(hb.weight()).isEqualTo(3);
        assertThat(hb.intervalMs()).isEqualTo(200);
        assertThat(hb.load()).isEqualTo(Load.UNKNOWN); // Ollama exposes no load figures
        assertThat(hb.gpus()).isEmpty(); // no nvidia-smi here
        assertThat(seen).extracting(s -> s.beat().orElseThrow().seq()).isSorted().doesNotHaveDuplicates();
    }

    @Test
    void ollamaFlavourHeartbeatsSayTheSimContinuesAFinalAssistantMessageWithPrefillOn(TestKafka kafka)
            throws Exception {
        startAgent(kafka, Backend.OLLAMA, Duration.ofMillis(200));

        assertThat(firstWithEveryPrefillKnown().modelInfo()).extracting(ModelInfo::name, ModelInfo::prefill)
                .containsExactly(tuple("llama3:8b", true), tuple("qwen2.5:7b", true));
    }

    @Test
    void ollamaFlavourHeartbeatsSayTheSimClosesTheTurnWithPrefillOff(TestKafka kafka) throws Exception {
        SimServer closing = new SimServer(new SimConfigBuilder("sim-b", List.of("llama3:8b", "qwen2.5:7b"))
                .ollamaPrefill(false).build(), Clock.systemUTC(), System::nanoTime);
        vertx.deployVerticle(closing).await(20, TimeUnit.SECONDS);
        startAgent(kafka, Backend.OLLAMA, Duration.ofMillis(200), closing);

        assertThat(firstWithEveryPrefillKnown().modelInfo()).extracting(ModelInfo::name, ModelInfo::prefill)
                .containsExactly(tuple("llama3:8b", false), tuple("qwen2.5:7b", false));
    }

    private Heartbeat firstWithEveryPrefillKnown() {
        return tail.awaitMatching(0, s -> s.beat().map(b -> !b.modelInfo().isEmpty()
                && b.modelInfo().stream().allMatch(m -> m.prefill() != null)).orElse(false),
                Duration.ofSeconds(10)).beat().orElseThrow();
    }

    @Test
    void vllmFlavourHeartbeatsCarryTheSimsLoad(TestKafka kafka) throws Exception {
        startAgent(kafka, Backend.VLLM, Duration.ofMillis(200));
        List<HeartbeatTail.Seen> seen = tail.awaitCount(11, Duration.ofSeconds(20));
        assertIntervalWithin20Percent(seen, 200);
        assertThat(seen.get(10).beat().orElseThrow().load()).isEqualTo(new Load(0, 0, 0.0));

        // Keep two generations running: the next heartbeats must show them.
        var streams = List.of(generate(), generate());
        HeartbeatTail.Seen busy = tail.awaitMatching(seen.size(),
                s -> s.beat().map(b -> b.load().inFlight() != null && b.load().inFlight() == 2).orElse(false),
                Duration.ofSeconds(10));
        Heartbeat hb = busy.beat().orElseThrow();
        assertThat(hb.backend()).isEqualTo("vllm");
        assertThat(hb.models()).containsExactly("llama3:8b", "qwen2.5:7b");
        assertThat(hb.load().kvCacheUsage()).isEqualTo(0.5); // 2 of the sim's 4 slots
        streams.forEach(s -> s.cancel(true));
    }

    @Test
    void turnsDownWithinOneIntervalOfFailingHealthAndBackUp(TestKafka kafka) throws Exception {
        startAgent(kafka, Backend.VLLM, Duration.ofMillis(500));
        tail.awaitMatching(0, s -> s.beat().map(b -> b.state() == NodeState.UP).orElse(false), Duration.ofSeconds(10));
        int mark = tail.seen().size();

        Instant failedAt = Instant.now();
        postFaults("{\"failHealth\": true}");
        HeartbeatTail.Seen down = tail.awaitMatching(mark,
                s -> s.beat().map(b -> b.state() == NodeState.DOWN).orElse(false), Duration.ofSeconds(10));
        assertThat(Duration.between(failedAt, down.timestamp())).isLessThanOrEqualTo(Duration.ofMillis(600));

        mark = tail.seen().size();
        Instant healedAt = Instant.now();
        postFaults("{\"failHealth\": false}");
        HeartbeatTail.Seen up = tail.awaitMatching(mark,
                s -> s.beat().map(b -> b.state() == NodeState.UP).orElse(false), Duration.ofSeconds(10));
        assertThat(Duration.between(healedAt, up.timestamp())).isLessThanOrEqualTo(Duration.ofMillis(600));
    }

    @Test
    void servesItsOwnMetrics(TestKafka kafka) throws Exception {
        String topic = "agent-metrics-" + UUID.randomUUID();
        tail = new HeartbeatTail(kafka.bootstrapServers(), topic);
        String url = "http://127.0.0.1:" + sim.port();
        agent = AgentRuntime.start(new AgentConfig(kafka.bootstrapServers(), topic, "gpu-m", url, url, Backend.VLLM, 1,
                null, Duration.ofMillis(200), Duration.ofSeconds(1), Duration.ofSeconds(5), "/nonexistent/nvidia-smi",
                false, false), Clock.systemUTC(), 0);
        tail.awaitCount(3, Duration.ofSeconds(10));

        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            String scrape = http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + agent.metricsPort() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            assertThat(scrape).containsPattern("(?m)^heartgate_agent_heartbeats_published_total [1-9]");
            assertThat(scrape).containsPattern("(?m)^heartgate_agent_probe_duration_seconds_count [1-9]");
            assertThat(scrape).contains("heartgate_agent_probe_failures_total 0.0");
            assertThat(scrape).contains("heartgate_agent_publish_failures_total 0.0");
            assertThat(scrape).contains("heartgate_agent_last_publish_age_seconds");
        });
    }

    @Test
    void publishesATombstoneOnClose(TestKafka kafka) throws Exception {
        startAgent(kafka, Backend.AUTO, Duration.ofMillis(200));
        tail.awaitCount(2, Duration.ofSeconds(10));

        agent.close();
        agent = null;

        HeartbeatTail.Seen leave = tail.awaitMatching(0, s -> s.decoded() instanceof Decoded.Leave,
                Duration.ofSeconds(10));
        assertThat(leave.decoded()).isEqualTo(new Decoded.Leave("gpu-auto"));
    }

    private static void assertIntervalWithin20Percent(List<HeartbeatTail.Seen> seen, long intervalMs) {
        long spanMs = Duration.between(seen.get(0).timestamp(), seen.get(10).timestamp()).toMillis();
        System.out.printf("[heartgate-test] 10 intervals of %d ms took %d ms%n", intervalMs, spanMs);
        assertThat(spanMs).isBetween(intervalMs * 10 * 8 / 10, intervalMs * 10 * 12 / 10);
    }

    private CompletableFuture<HttpResponse<InputStream>> generate() {
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + sim.port() + "/api/generate"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"llama3:8b\",\"prompt\":\"p\"}")).build();
        return http.sendAsync(r, HttpResponse.BodyHandlers.ofInputStream());
    }

    private void postFaults(String json) throws Exception {
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + sim.port() + "/sim/faults"))
                .POST(HttpRequest.BodyPublishers.ofString(json)).build();
        assertThat(http.send(r, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    }
}
