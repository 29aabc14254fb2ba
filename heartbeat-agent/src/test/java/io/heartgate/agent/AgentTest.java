package io.heartgate.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.heartgate.agent.gpu.GpuSampler;
import io.heartgate.agent.probe.Backend;
import io.heartgate.agent.probe.HttpGetter;
import io.heartgate.agent.probe.Prober;
import io.heartgate.agent.publish.HeartbeatPublisher;
import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.NodeState;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.testkit.MutableClock;
import java.io.IOException;
import java.net.ConnectException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class AgentTest {

    private final MutableClock clock = new MutableClock();
    private final AtomicBoolean healthy = new AtomicBoolean(true);
    private final HttpGetter server = path -> {
        if (!healthy.get()) {
            throw new ConnectException("Connection refused");
        }
        return switch (path) {
            case "/health" -> new HttpGetter.Response(200, "");
            case "/v1/models" -> new HttpGetter.Response(200, Samples.read("vllm-v1-models.json"));
            case "/metrics" -> new HttpGetter.Response(200, "vllm:num_requests_running{model_name=\"m\"} 3.0\n"
                    + "vllm:num_requests_waiting{model_name=\"m\"} 1.0\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n");
            default -> new HttpGetter.Response(404, "");
        };
    };
    private final GpuSampler gpus = new GpuSampler(() -> List.of(new Gpu("NVIDIA H200", 0.0, 0L, 143771L)),
            Duration.ofSeconds(5), clock, "gpu-a");
    private final ExecutorService probeExec = Executors.newSingleThreadExecutor();

    @AfterEach
    void stop() {
        probeExec.shutdownNow();
    }

    private AgentConfig config(List<String> models, boolean drain) {
        return new AgentConfig("127.0.0.1:9092", "gpu-heartbeats", "gpu-a", "http://10.0.0.5:8000",
                "http://127.0.0.1:8000", Backend.VLLM, 4, models, Duration.ofSeconds(1), Duration.ofSeconds(2),
                Duration.ofSeconds(5), "nvidia-smi", drain, false);
    }

    private AgentConfig config(Backend backend, Double prefillTps) {
        return new AgentConfig("127.0.0.1:9092", "gpu-heartbeats", "gpu-a", "http://10.0.0.5:8000",
                "http://127.0.0.1:8000", backend, 4, null, Duration.ofSeconds(1), Duration.ofSeconds(2),
                Duration.ofSeconds(5), "nvidia-smi", false, false, KafkaSettings.NONE, null, null, prefillTps);
    }

    private Agent agent(AgentConfig config) {
        return new Agent(config, new Prober(config.backend(), server, "gpu-a"), gpus, null, clock);
    }

    @Test
    void buildsHeartbeatsFromTheLatestProbeWithIncreasingSeqAndTheAgentsClock() {
        Agent agent = agent(config(null, false));
        gpus.refreshIfDue();
        agent.probeNow();

        Heartbeat first = agent.compose();
        clock.advance(Duration.ofSeconds(1));
        Heartbeat second = agent.compose();

        assertThat(first.state()).isEqualTo(NodeState.UP);
        assertThat(first.seq()).isEqualTo(1L);
        assertThat(second.seq()).isEqualTo(2L);
        assertThat(first.instance()).isEqualTo(second.instance()).isEqualTo(agent.instance());
        assertThat(second.sentAt()).isEqualTo(clock.instant());
        assertThat(first.url()).isEqualTo("http://10.0.0.5:8000");
        assertThat(first.weight()).isEqualTo(4);
        assertThat(first.intervalMs()).isEqualTo(1000);
        assertThat(first.backend()).isEqualTo("vllm");
        assertThat(first.models()).containsExactly("TinyLlama/TinyLlama-1.1B-Chat-v1.0");
        assertThat(first.load()).isEqualTo(new Load(3, 1, 0.5));
        assertThat(first.gpus()).containsExactly(new Gpu("NVIDIA H200", 0.0, 0L, 143771L));
        assertThat(first.capacity()).as("vLLM does not say; no --capacity").isNull();
    }

    @Test
    void reportsTheOperatorsCapacityWhenGiven() {
        AgentConfig c = config(null, false);
        AgentConfig withCapacity = new AgentConfig(c.kafka(), c.topic(), c.nodeId(), c.url(), c.probeUrl(), c.backend(),
                c.weight(), c.models(), c.interval(), c.probeTimeout(), c.gpuInterval(), c.nvidiaSmi(), false, false,
                c.kafkaClient(), null, 16);
        Agent agent = agent(withCapacity);
        agent.probeNow();

        assertThat(agent.compose().capacity()).isEqualTo(16);
    }

    /**
     * {@code --prefill-tps} stands for the server's own figure in every heartbeat: over vLLM, which
     * gives none, over llama.cpp, whose metrics measure one, and while the node is down.
     */
    @Test
    void reportsTheOperatorsPrefillSpeedInEveryHeartbeat() {
        Agent agent = agent(config(Backend.VLLM, 4200.0));
        agent.probeNow();
        assertThat(agent.compose().load()).isEqualTo(new Load(3, 1, 0.5, null, 4200.0));

        healthy.set(false);
        agent.probeNow();
        Heartbeat down = agent.compose();
        assertThat(down.state()).isEqualTo(NodeState.DOWN);
        assertThat(down.load()).isEqualTo(Load.UNKNOWN.withPrefillTps(4200.0));
        assertThat(agent(config(Backend.VLLM, null)).compose().load()).as("without the flag: vLLM gives none")
                .isEqualTo(Load.UNKNOWN);
    }

    @Test
    void thePrefillSpeedTheOperatorStatesWinsOverTheOneMeasured() {
        String before = Samples.read("llamacpp-metrics-throughput-excerpt.txt");
        AtomicBoolean later = new AtomicBoolean();
        HttpGetter llamaCpp = path -> switch (path) {
            case "/health" -> new HttpGetter.Response(200, "{\"status\":\"ok\"}");
            case "/v1/models" -> new HttpGetter.Response(200, Samples.read("llamacpp-v1-models.json"));
            case "/metrics" -> new HttpGetter.Response(200, later.get()
                    ? before.replace("prompt_tokens_total 143", "prompt_tokens_total 1143")
                            .replace("prompt_seconds_total 8.168", "prompt_seconds_total 9.168")
                    : before);
            default -> new HttpGetter.Response(404, "");
        };
        Agent fromMetrics = new Agent(config(Backend.LLAMACPP, null), new Prober(Backend.LLAMACPP, llamaCpp, "gpu-a"),
                gpus, null, clock);
        Agent fromOperator = new Agent(config(Backend.LLAMACPP, 250.0), new Prober(Backend.LLAMACPP, llamaCpp, "gpu-a"),
                gpus, null, clock);
        fromMetrics.probeNow();
        fromOperator.probeNow();
        later.set(true);
        fromMetrics.probeNow();
        fromOperator.probeNow();

        assertThat(fromMetrics.compose().load().prefillTps()).as("1000 tokens in 1 s").isCloseTo(1000.0, within(1e-6));
        assertThat(fromOperator.compose().load().prefillTps()).isEqualTo(250.0);
    }

    @Test
    void isDownWhenTheHealthProbeFailsAndOmitsLoad() {
        Agent agent = agent(config(null, false));
        agent.probeNow();
        healthy.set(false);
        agent.probeNow();

        Heartbeat hb = agent.compose();

        assertThat(hb.state()).isEqualTo(NodeState.DOWN);
        assertThat(hb.load()).isEqualTo(Load.UNKNOWN);
        assertThat(hb.models()).as("last known models stay advertised").hasSize(1);
    }

    @Test
    void isDownWhenTheProbeResultIsStale() {
        Agent agent = agent(config(null, false));
        agent.probeNow();

        clock.advance(agent.staleAfter());
        assertThat(agent.compose().state()).isEqualTo(NodeState.UP);
        clock.advance(Duration.ofMillis(1));
        assertThat(agent.compose().state()).isEqualTo(NodeState.DOWN);
    }

    @Test
    void drainsOnRequestButDownWins() {
        Agent agent = agent(config(null, true));
        agent.probeNow();
        assertThat(agent.compose().state()).isEqualTo(NodeState.DRAINING);

        agent.setDraining(false);
        assertThat(agent.compose().state()).isEqualTo(NodeState.UP);

        agent.setDraining(true);
        healthy.set(false);
        agent.probeNow();
        assertThat(agent.compose().state()).isEqualTo(NodeState.DOWN);
    }

    @Test
    void advertisesConfiguredModelsInsteadOfProbedOnes() {
        Agent agent = agent(config(List.of("a", "b"), false));
        agent.probeNow();

        assertThat(agent.compose().models()).containsExactly("a", "b");
    }

    @Test
    void publishesOnTickAfterProbing() {
        MockProducer<byte[], byte[]> producer =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        AgentConfig config = config(null, false);
        Agent agent = new Agent(config, new Prober(config.backend(), server, "gpu-a"), gpus,
                new HeartbeatPublisher(producer, "gpu-heartbeats", "gpu-a"), clock);

        agent.tick(probeExec);
        agent.tick(probeExec);

        assertThat(producer.history()).hasSize(2);
        Heartbeat hb = ((Decoded.Beat) new HeartbeatCodec()
                .decodeRecord(producer.history().get(1).key(), producer.history().get(1).value())).heartbeat();
        assertThat(hb.seq()).isEqualTo(2L);
        assertThat(hb.state()).isEqualTo(NodeState.UP);
    }

    @Test
    void tickNeverWaitsLongerThanHalfAnIntervalForAWedgedProbe() throws IOException {
        CountDownLatch never = new CountDownLatch(1);
        HttpGetter wedged = path -> {
            try {
                // Stands in for a server that accepted the connection and went silent.
                never.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            throw new IOException("no answer");
        };
        MockProducer<byte[], byte[]> producer =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        AgentConfig config = config(null, false);
        Agent agent = new Agent(config, new Prober(Backend.VLLM, wedged, "gpu-a"), gpus,
                new HeartbeatPublisher(producer, "gpu-heartbeats", "gpu-a"), clock);

        long start = System.nanoTime();
        agent.tick(probeExec);
        long tookMs = (System.nanoTime() - start) / 1_000_000;

        assertThat(tookMs).isLessThan(2_000); // budget is 500 ms; generous margin for a loaded CI
        assertThat(producer.history()).hasSize(1);
    }
}
