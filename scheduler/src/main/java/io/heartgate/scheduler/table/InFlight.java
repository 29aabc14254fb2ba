package io.heartgate.scheduler.table;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts this scheduler's requests in flight to one node. It outlives table snapshots (the table
 * hands the same counter to every snapshot of the node), so a count taken on one snapshot is
 * released on the same counter even if the table changed meanwhile. Thread-safe.
 */
public final class InFlight {

    private final AtomicInteger count = new AtomicInteger();

    /** Returns the requests in flight now. */
    public int get() {
        return count.get();
    }

    /** Counts one more request. */
    public void increment() {
        count.incrementAndGet();
    }

    /** Counts one request less; never goes below zero. */
    public void decrement() {
        count.updateAndGet(c -> c > 0 ? c - 1 : 0);
    }
}
