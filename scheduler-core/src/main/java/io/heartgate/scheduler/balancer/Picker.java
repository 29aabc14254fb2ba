package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;

/**
 * A strategy's picker for one candidate list of one table snapshot: built once when the snapshot
 * is first used for the list's model ({@link Balancer#over}), immutable but for the strategy's
 * shared rotation, so a pick takes no lock and looks nothing up. Thread-safe.
 */
public interface Picker {

    /** Returns one of the list's nodes; the list is never empty. */
    Node pick();
}
