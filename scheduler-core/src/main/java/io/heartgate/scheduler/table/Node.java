package io.heartgate.scheduler.table;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
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
 * @param others requests the node reported running or waiting beyond this scheduler's own peak
 *     since the heartbeat before: other replicas' and direct clients' work, as of its heartbeat
 */
public record Node(Heartbeat heartbeat, Instant lastSeen, Set<String> models, Set<String> loaded, InFlight inFlight,
                   int others) {

    /** The backend that loads models on demand and says which are in memory ({@code /api/ps}). */
    private static final String LOADS_ON_DEMAND = "ollama";

    /** Builds the view of a heartbeat, as if every request the node reports were this scheduler's. */
    public static Node of(Heartbeat heartbeat, Instant lastSeen, InFlight inFlight) {
        return of(heartbeat, lastSeen, inFlight, 0);
    }

    /** Builds the view of a heartbeat whose node also has {@code others} requests from elsewhere. */
    public static Node of(Heartbeat heartbeat, Instant lastSeen, InFlight inFlight, int others) {
        Set<String> models = heartbeat.models().stream().map(ModelNames::normalize)
                .collect(Collectors.toUnmodifiableSet());
        Set<String> loaded = heartbeat.loaded().stream().map(m -> ModelNames.normalize(m.name()))
                .collect(Collectors.toUnmodifiableSet());
        return new Node(heartbeat, lastSeen, models, loaded, inFlight, others);
    }

    /**
     * Returns the requests a node reports running and waiting ({@code load}) beyond {@code ownPeak},
     * this scheduler's most in flight there since the heartbeat before: the work others sent it. A
     * stale report of this scheduler's own requests that finished since is not counted, so the
     * estimate errs low: toward using a slot, never toward leaving one idle.
     */
    public static int othersOf(Load load, int ownPeak) {
        int reported = (load.inFlight() == null ? 0 : load.inFlight()) + (load.queued() == null ? 0 : load.queued());
        return Math.max(0, reported - ownPeak);
    }

    /** Returns how many requests the node generates at once, as its heartbeat says; 0 when unknown. */
    public int capacity() {
        Integer c = heartbeat.capacity();
        return c == null ? 0 : c;
    }

    /**
     * Returns how many of this scheduler's requests the node may have in flight at once: its
     * capacity less the work others sent it; {@link Integer#MAX_VALUE} when its capacity is unknown.
     */
    public int limit() {
        int c = capacity();
        return c == 0 ? Integer.MAX_VALUE : Math.max(0, c - others);
    }

    /** Returns the requests the node is known to have: this scheduler's in flight and the others'. */
    public int load() {
        return inFlight.get() + others;
    }

    /** Says whether the node has a free slot for another request: always, when its capacity is unknown. */
    public boolean hasRoom() {
        return inFlight.get() < limit();
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
