package io.heartgate.scheduler.table;

import io.heartgate.protocol.Heartbeat;
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
 * @param inFlight this scheduler's requests in flight to the node
 */
public record Node(Heartbeat heartbeat, Instant lastSeen, Set<String> models, InFlight inFlight) {

    /** Builds the view of a heartbeat. */
    public static Node of(Heartbeat heartbeat, Instant lastSeen, InFlight inFlight) {
        Set<String> models = heartbeat.models().stream().map(ModelNames::normalize)
                .collect(Collectors.toUnmodifiableSet());
        return new Node(heartbeat, lastSeen, models, inFlight);
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

    /** Returns when the node expires without another heartbeat, given the missed-heartbeat count. */
    public Instant expiresAt(int missedHeartbeats) {
        return lastSeen.plusMillis((long) missedHeartbeats * heartbeat.intervalMs());
    }
}
