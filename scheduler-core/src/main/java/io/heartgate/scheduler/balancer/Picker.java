package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.List;

/**
 * A strategy's picker for one candidate list of one table snapshot: built once when the snapshot
 * is first used for the list's model ({@link Balancer#over}), immutable but for the strategy's
 * shared rotation, so a pick takes no lock and looks nothing up. It keeps what it needs of the list
 * by position (weights, where the in-flight counts live), never the nodes' figures, so it serves
 * every later snapshot whose list holds the same nodes in the same order: a renewal of load figures
 * costs no new picker. Thread-safe.
 */
public interface Picker {

    /**
     * Returns one of {@code nodes}: the list the picker was built over, or the same nodes in the same
     * order from a later snapshot (their heartbeats renewed). Never empty.
     */
    Node pick(List<Node> nodes);
}
