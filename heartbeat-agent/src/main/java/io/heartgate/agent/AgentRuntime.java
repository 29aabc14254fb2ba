package io.heartgate.agent;

import io.heartgate.agent.gpu.GpuSampler;
import io.heartgate.agent.gpu.NvidiaSmi;
import io.heartgate.agent.probe.JdkHttpGetter;
import io.heartgate.agent.probe.Prober;
import io.heartgate.agent.publish.HeartbeatPublisher;
import io.heartgate.protocol.Durations;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.signing.HeartbeatSigner;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wires and runs one agent: prober, GPU sampler, Kafka publisher and the three schedules. Used by the
 * command line and by the scheduler's demo mode, which runs several agents in one process.
 * {@link #close()} stops the loops and publishes the tombstone within about 1.5 s.
 */
public final class AgentRuntime implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(AgentRuntime.class);
    private static final Duration TOMBSTONE_BUDGET = Duration.ofMillis(1200);

    private final AgentConfig config;
    private final Agent agent;
    private final HeartbeatPublisher publisher;
    private final ScheduledExecutorService heartbeats;
    private final ScheduledExecutorService probes;
    private final ScheduledExecutorService gpuReads;
    private volatile boolean closed;

    private AgentRuntime(AgentConfig config, Agent agent, HeartbeatPublisher publisher) {
        this.config = config;
        this.agent = agent;
        this.publisher = publisher;
        String id = config.nodeId();
        this.heartbeats = Executors.newSingleThreadScheduledExecutor(named("agent-heartbeat-" + id));
        this.probes = Executors.newSingleThreadScheduledExecutor(named("agent-probe-" + id));
        this.gpuReads = Executors.newSingleThreadScheduledExecutor(named("agent-gpu-" + id));
    }

    private AgentMetrics metrics;

    /** Builds the agent for {@code config} (which must name a Kafka) and starts its loops. */
    public static AgentRuntime start(AgentConfig config, Clock clock) {
        return start(config, clock, -1);
    }

    /**
     * Builds and starts the agent; with {@code metricsPort} of 0 or more it also serves its own
     * Prometheus metrics on that port (0 = any free port).
     */
    public static AgentRuntime start(AgentConfig config, Clock clock, int metricsPort) {
        if (config.kafka() == null) {
            throw new InvalidSettingException("kafka", "is required");
        }
        HeartbeatPublisher publisher = new HeartbeatPublisher(
                new KafkaProducer<>(HeartbeatPublisher.producerConfig(config.kafka(), config.nodeId(), config.interval(),
                        config.kafkaClient())),
                config.topic(), config.nodeId(), clock,
                config.signingKeys() == null ? null : new HeartbeatSigner(config.signingKeys()));
        if (!config.kafkaClient().isEmpty()) {
            log.info("Node {} Kafka client properties: {}", config.nodeId(), config.kafkaClient().summary());
        }
        config.kafkaClient().unknown(ProducerConfig.configNames()).forEach(name ->
                log.warn("Node {}: Kafka client property {} is not a producer setting; ignored", config.nodeId(), name));
        if (config.signingKeys() != null) {
            log.info("Node {} signs its heartbeats with key {}", config.nodeId(), config.signingKeys().first().id());
        }
        Agent agent = new Agent(config, prober(config, clock), gpuSampler(config, clock), publisher, clock);
        AgentRuntime runtime = new AgentRuntime(config, agent, publisher);
        if (metricsPort >= 0) {
            AgentMetrics m = new AgentMetrics();
            m.bind(publisher, clock);
            agent.metrics(m);
            try {
                runtime.metricsPort = m.serve("0.0.0.0", metricsPort);
            } catch (IOException e) {
                publisher.close(Duration.ZERO);
                throw new InvalidSettingException("metricsPort", metricsPort + ": " + e.getMessage());
            }
            runtime.metrics = m;
        }
        log.info("Agent for node {} advertising {} (probing {}, backend {}) every {} to Kafka {} topic {}{}",
                config.nodeId(), config.url(), config.probeUrl(), config.backend().label(),
                Durations.format(config.interval()), config.kafka(), config.topic(),
                config.drain() ? ", draining" : "");
        agent.start(runtime.heartbeats, runtime.probes, runtime.gpuReads);
        return runtime;
    }

    static Prober prober(AgentConfig config, Clock clock) {
        return new Prober(config.backend(), new JdkHttpGetter(config.probeUrl(), config.effectiveProbeTimeout()),
                config.nodeId(), clock);
    }

    static GpuSampler gpuSampler(AgentConfig config, Clock clock) {
        NvidiaSmi smi = new NvidiaSmi(config.nvidiaSmi(), Duration.ofSeconds(5));
        return new GpuSampler(smi::read, config.gpuInterval(), clock, config.nodeId());
    }

    /** Returns the agent, for drain requests. */
    public Agent agent() {
        return agent;
    }

    /** Returns the publisher, for its counters. */
    public HeartbeatPublisher publisher() {
        return publisher;
    }

    private int metricsPort = -1;

    /** Returns the port of the agent's own metrics, or -1 when it serves none. */
    public int metricsPort() {
        return metricsPort;
    }

    /** Returns whether the heartbeat loop is still scheduled. */
    public boolean isRunning() {
        return !closed && !heartbeats.isShutdown();
    }

    /** Stops the loops, publishes the tombstone (waiting at most about 1.2 s) and closes the producer. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        log.info("Node {} agent stopping", config.nodeId());
        heartbeats.shutdownNow();
        probes.shutdownNow();
        gpuReads.shutdownNow();
        try {
            heartbeats.awaitTermination(300, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        publisher.publishTombstone(TOMBSTONE_BUDGET);
        publisher.close(Duration.ofMillis(200));
        if (metrics != null) {
            metrics.close();
        }
        log.info("Node {} agent stopped", config.nodeId());
    }

    private static ThreadFactory named(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
