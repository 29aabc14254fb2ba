package io.heartgate.scheduler.table;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.protocol.NodeState;
import java.time.Instant;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Shows one node as the request path sees it in a table snapshot: its latest accepted heartbeat,
 * when the scheduler saw it (broker time), and whether it takes new requests. Immutable except for
 * {@link #inFlight()}, a counter shared across snapshots.
 *
 * @param heartbeat the latest accepted heartbeat
 * @param lastSeen when it was seen, by the broker's clock capped at the scheduler's
 * @param models the heartbeat's models, normalised ({@link ModelNames}); empty means any model
 * @param loaded the heartbeat's models in memory, normalised; empty when it names none
 * @param inFlight this scheduler's requests in flight to the node
 */
public record Node(Heartbeat heartbeat, Instant lastSeen, Set<String> models, Set<String> loaded, InFlight inFlight) {

    /** The backend that loads models on demand and says which are in memory ({@code /api/ps}). */
    private static final String LOADS_ON_DEMAND = "ollama";

    /** Builds the view of a heartbeat. */
    public static Node of(Heartbeat heartbeat, Instant lastSeen, InFlight inFlight) {
        Set<String> models = heartbeat.models().stream().map(ModelNames::normalize)
                .collect(Collectors.toUnmodifiableSet());
        Set<String> loaded = heartbeat.loaded().stream().map(m -> ModelNames.normalize(m.name()))
                .collect(Collectors.toUnmodifiableSet());
        return new Node(heartbeat, lastSeen, models, loaded, inFlight);
    }

    public String id() {
        return heartbeat.nodeId();
    }

    public String url() {
        return heartbeat.url();
    }

    public int weight() {
        return heartbeat.weight();
    }

    public NodeState state() {
        return heartbeat.state();
    }

    /** Returns whether the node takes new requests: only {@code UP} nodes do. */
    public boolean routable() {
        return heartbeat.state() == NodeState.UP;
    }

    /** Returns whether the node serves {@code normalizedModel}; a node listing none serves any. */
    public boolean serves(String normalizedModel) {
        return models.isEmpty() || models.contains(normalizedModel);
    }

    /**
     * Says whether the heartbeat shows {@code normalizedModel} in memory: listed among the loaded
     * models, or, for a server that holds its models all the time (vLLM, TGI, llama.cpp, SGLang: all but
     * Ollama, which loads on demand), served at all. An Ollama node that lists nothing loaded has
     * nothing in memory.
     */
    public boolean holdsInMemory(String normalizedModel) {
        if (!loaded.isEmpty()) {
            return loaded.contains(normalizedModel);
        }
        return !LOADS_ON_DEMAND.equals(heartbeat.backend()) && serves(normalizedModel);
    }

    /** Says whether the node loads models on demand (Ollama) and its heartbeat lists none in memory. */
    public boolean holdsNothing() {
        return loaded.isEmpty() && LOADS_ON_DEMAND.equals(heartbeat.backend());
    }

    /**
     * Returns the free GPU memory the heartbeat reports, in MiB, summed over the GPUs that report
     * both figures; -1 when none does.
     */
    public long freeGpuMemoryMiB() {
        long free = -1;
        for (Gpu g : heartbeat.gpus()) {
            if (g.memoryTotalMiB() != null && g.memoryUsedMiB() != null) {
                free = Math.max(free, 0) + Math.max(0, g.memoryTotalMiB() - g.memoryUsedMiB());
            }
        }
        return free;
    }

    /** Returns the size in bytes the node reports for {@code normalizedModel}, or -1 when it reports none. */
    public long modelSizeBytes(String normalizedModel) {
        for (ModelInfo m : heartbeat.modelInfo()) {
            if (m.size() != null && normalizedModel.equals(ModelNames.normalize(m.name()))) {
                return m.size();
            }
        }
        return -1;
    }

    /** Returns when the node expires without another heartbeat, given the missed-heartbeat count. */
    public Instant expiresAt(int missedHeartbeats) {
        return lastSeen.plusMillis((long) missedHeartbeats * heartbeat.intervalMs());
    }
}
