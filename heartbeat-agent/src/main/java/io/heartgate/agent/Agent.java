package io.heartgate.agent;

import io.heartgate.agent.gpu.GpuSampler;
import io.heartgate.agent.probe.Backend;
import io.heartgate.agent.probe.ProbeResult;
import io.heartgate.agent.probe.Prober;
import io.heartgate.agent.publish.HeartbeatPublisher;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.NodeState;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one node's heartbeat loop: on every tick it starts a probe (unless one is still running),
 * waits for it at most half an interval, and publishes a heartbeat built from the newest probe
 * result. A slow or wedged probe therefore never delays or skips a heartbeat; its result is used
 * on the tick it finishes by, and a probe result older than {@link #staleAfter()} counts as DOWN.
 *
 * <p>Ticks run at a fixed rate on {@code heartbeatExec}, probes on {@code probeExec}, GPU reads on
 * their own cadence on {@code gpuExec}. Each scheduled task catches everything so timers never die.
 */
public final class Agent {

    private static final Logger log = LoggerFactory.getLogger(Agent.class);

    private final AgentConfig config;
    private final Prober prober;
    private final GpuSampler gpus;
    private final HeartbeatPublisher publisher;
    private final Clock clock;
    private final String instance = UUID.randomUUID().toString();
    private final Duration probeBudget;
    private volatile Probed latest;
    private volatile boolean draining;
    private long seq;
    private NodeState lastState;
    private Future<?> probeInFlight;
    private volatile AgentMetrics metrics;

    private record Probed(ProbeResult result, Instant at) {
    }

    /**
     * Creates an agent; nothing runs until {@link #start}.
     *
     * @param publisher where heartbeats go; {@code null} for {@code --once}
     */
    public Agent(AgentConfig config, Prober prober, GpuSampler gpus, HeartbeatPublisher publisher, Clock clock) {
        this.config = config;
        this.prober = prober;
        this.gpus = gpus;
        this.publisher = publisher;
        this.clock = clock;
        this.draining = config.drain();
        long half = Math.max(50, config.interval().toMillis() / 2);
        this.probeBudget = Duration.ofMillis(Math.min(half, config.effectiveProbeTimeout().toMillis()));
        this.latest = new Probed(ProbeResult.down(null, List.of(), "not probed yet"), clock.instant());
    }

    /** Starts the loops: a first probe, then heartbeats at a fixed rate. */
    public void start(ScheduledExecutorService heartbeatExec, ScheduledExecutorService probeExec,
                      ScheduledExecutorService gpuExec) {
        gpuExec.scheduleWithFixedDelay(safely("gpu", gpus::refreshIfDue), 0, 100, TimeUnit.MILLISECONDS);
        heartbeatExec.scheduleAtFixedRate(safely("heartbeat", () -> tick(probeExec)),
                0, config.interval().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Runs one probe now, on the calling thread. */
    public void probeNow() {
        AgentMetrics m = metrics;
        ProbeResult r = m == null ? prober.probe() : m.probes().record(prober::probe);
        if (m != null && !r.healthy()) {
            m.probeFailed();
        }
        latest = new Probed(r, clock.instant());
    }

    /** Records probe figures in {@code m} from now on. */
    void metrics(AgentMetrics m) {
        this.metrics = m;
    }

    /** Switches the node to DRAINING (or back): schedulers stop sending it new work. Thread-safe. */
    public void setDraining(boolean value) {
        if (draining != value) {
            draining = value;
            log.info("Node {} {}", config.nodeId(), value ? "draining: no new requests will be routed to it"
                    : "no longer draining");
        }
    }

    /** Returns the random id of this agent run. */
    public String instance() {
        return instance;
    }

    /** Returns how old a probe result may be before the node counts as DOWN. */
    Duration staleAfter() {
        // A probe makes at most five requests, each bounded by the probe timeout (Ollama's: version,
        // tags, ps and at most Prober.SHOWS_PER_PROBE shows).
        return config.interval().multipliedBy(2).plus(config.effectiveProbeTimeout().multipliedBy(5));
    }

    /** Runs one heartbeat tick: refresh the probe if it can be done in time, then publish. */
    void tick(ExecutorService probeExec) {
        if (probeInFlight == null || probeInFlight.isDone()) {
            probeInFlight = probeExec.submit(safely("probe", this::probeNow));
        }
        try {
            probeInFlight.get(probeBudget.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            log.debug("Node {} probe still running; this heartbeat uses the previous result", config.nodeId());
        } catch (ExecutionException e) {
            log.warn("Node {} probe failed unexpectedly", config.nodeId(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        publisher.publish(compose());
    }

    /** Builds the next heartbeat from the newest probe result. Called from one thread at a time. */
    synchronized Heartbeat compose() {
        Probed probed = latest;
        ProbeResult r = probed.result();
        Instant now = clock.instant();
        boolean stale = probed.at().plus(staleAfter()).isBefore(now);
        NodeState state;
        String why;
        if (stale) {
            state = NodeState.DOWN;
            why = "no probe result for " + Duration.between(probed.at(), now).toMillis() + " ms";
        } else if (!r.healthy()) {
            state = NodeState.DOWN;
            why = r.detail();
        } else {
            state = draining ? NodeState.DRAINING : NodeState.UP;
            why = draining ? "draining" : "healthy";
        }
        if (state != lastState) {
            if (state == NodeState.DOWN) {
                log.warn("Node {} is DOWN: {}", config.nodeId(), why);
            } else {
                log.info("Node {} is {} ({})", config.nodeId(), state, why);
            }
            lastState = state;
        }
        Backend backend = r.backend() != null ? r.backend() : config.backend();
        Load load = stale || !r.healthy() ? Load.UNKNOWN : r.load();
        if (config.prefillTps() != null) {
            load = load.withPrefillTps(config.prefillTps()); // the operator's figure, as --capacity's, in every state
        }
        seq++;
        return Heartbeat.builder(config.nodeId(), config.url())
                .instance(instance)
                .seq(seq)
                .state(state)
                .weight(config.weight())
                .intervalMs((int) config.interval().toMillis())
                .sentAt(now)
                .backend(backend == Backend.AUTO ? null : backend.label())
                .models(config.models() != null ? config.models() : r.models())
                .load(load)
                .gpus(gpus.current())
                .modelInfo(config.models() != null ? List.of() : r.modelInfo())
                .loaded(stale || !r.healthy() ? List.of() : r.loaded())
                .capacity(config.capacity() != null ? config.capacity() : r.capacity())
                .build();
    }

    private Runnable safely(String what, Runnable task) {
        return () -> {
            try {
                task.run();
            } catch (Throwable t) {
                // A scheduled task that throws is never run again: log and carry on instead.
                log.error("Node {} {} task failed; it keeps running", config.nodeId(), what, t);
            }
        };
    }
}
