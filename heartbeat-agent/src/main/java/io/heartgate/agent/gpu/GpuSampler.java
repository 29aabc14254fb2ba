package io.heartgate.agent.gpu;

import io.heartgate.protocol.Gpu;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the latest GPU figures, refreshed on a slower cadence than heartbeats because nvidia-smi
 * costs tens of milliseconds. Figures older than three cadences are dropped rather than published
 * as if current. Logs the first failure and the recovery once each. {@link #refreshIfDue()} runs on
 * one thread; {@link #current()} may be read from any.
 */
public final class GpuSampler {

    private static final Logger log = LoggerFactory.getLogger(GpuSampler.class);

    /** Reads GPU figures; {@link NvidiaSmi#read()} in production. */
    @FunctionalInterface
    public interface Source {
        List<Gpu> read() throws IOException;
    }

    private final Source source;
    private final Duration cadence;
    private final Clock clock;
    private final String nodeId;
    private Instant nextDue = Instant.MIN;
    private boolean failing;
    private volatile Snapshot latest = new Snapshot(List.of(), Instant.MIN);

    /** Creates a sampler; nothing runs until {@link #refreshIfDue()}. */
    public GpuSampler(Source source, Duration cadence, Clock clock, String nodeId) {
        this.source = source;
        this.cadence = cadence;
        this.clock = clock;
        this.nodeId = nodeId;
    }

    /** Reads the GPUs when the cadence says so; returns whether it read. Never throws. */
    public boolean refreshIfDue() {
        Instant now = clock.instant();
        if (now.isBefore(nextDue)) {
            return false;
        }
        nextDue = now.plus(cadence);
        try {
            List<Gpu> gpus = source.read();
            latest = new Snapshot(gpus, clock.instant());
            if (failing) {
                failing = false;
                log.info("Node {} GPU figures available again ({} GPUs)", nodeId, gpus.size());
            }
        } catch (IOException | RuntimeException e) {
            if (!failing) {
                failing = true;
                log.info("Node {} heartbeats carry no GPU figures: {}", nodeId, e.getMessage());
            }
            latest = new Snapshot(List.of(), Instant.MIN);
        }
        return true;
    }

    /** Returns the latest figures, or an empty list when none are fresh. */
    public List<Gpu> current() {
        Snapshot s = latest;
        if (s.readAt.plus(cadence.multipliedBy(3)).isBefore(clock.instant())) {
            return List.of();
        }
        return s.gpus;
    }

    private record Snapshot(List<Gpu> gpus, Instant readAt) {
    }
}
