package io.heartgate.scheduler.discovery;

import io.heartgate.protocol.Rule;
import io.heartgate.scheduler.table.NodeTable;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** Counts what discovery did with each record; thread-safe, read by the admin API and metrics. */
public final class DiscoveryStats {

    private final LongAdder received = new LongAdder();
    private final LongAdder tombstones = new LongAdder();
    private final Map<NodeTable.Outcome, LongAdder> outcomes = new EnumMap<>(NodeTable.Outcome.class);
    private final Map<Rule, LongAdder> rejected = new EnumMap<>(Rule.class);
    private final LongAdder expirations = new LongAdder();
    private final LongAdder authRefusals = new LongAdder();

    /** Creates zeroed counters. */
    public DiscoveryStats() {
        for (NodeTable.Outcome o : NodeTable.Outcome.values()) {
            outcomes.put(o, new LongAdder());
        }
        for (Rule r : Rule.values()) {
            rejected.put(r, new LongAdder());
        }
    }

    void received() {
        received.increment();
    }

    void outcome(NodeTable.Outcome o) {
        outcomes.get(o).increment();
    }

    void rejected(Rule r) {
        rejected.get(r).increment();
    }

    void tombstone() {
        tombstones.increment();
    }

    void expired(int n) {
        expirations.add(n);
    }

    void authRefused() {
        authRefusals.increment();
    }

    /** Returns records received. */
    public long receivedCount() {
        return received.sum();
    }

    /** Returns heartbeats accepted (joins and renewals). */
    public long acceptedCount() {
        return outcomes.get(NodeTable.Outcome.JOINED).sum() + outcomes.get(NodeTable.Outcome.RENEWED).sum();
    }

    /** Returns the count of one outcome. */
    public long outcomeCount(NodeTable.Outcome o) {
        return outcomes.get(o).sum();
    }

    /** Returns messages rejected for breaking {@code rule}. */
    public long rejectedCount(Rule rule) {
        return rejected.get(rule).sum();
    }

    /** Returns messages rejected for any rule. */
    public long rejectedCount() {
        return rejected.values().stream().mapToLong(LongAdder::sum).sum();
    }

    /** Returns tombstones received. */
    public long tombstoneCount() {
        return tombstones.sum();
    }

    /** Returns nodes expired. */
    public long expirationCount() {
        return expirations.sum();
    }

    /** Returns the times Kafka refused discovery's credentials (the first and every retry). */
    public long authRefusalCount() {
        return authRefusals.sum();
    }
}
