package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;

/**
 * Picks the node for one request among candidates the table already filtered (routable, serving the
 * requested model, in node-id order). Knows nothing of HTTP or Kafka. Two shapes, after Armeria's:
 * a {@link Picker} built once per candidate list of a table snapshot ({@link #over}), published
 * with that snapshot, for the model's whole list; and a pick among a list made for one request
 * ({@link #pick}: the nodes not tried yet, not ejected, warm), which keeps no state for that list.
 * Neither takes a lock nor keeps anything by a list's identity. Implementations are thread-safe:
 * many request threads pick at once.
 */
public interface Balancer {

    /** Returns one of {@code candidates}, a list made for one request; empty exactly when it is empty. */
    Optional<Node> pick(List<Node> candidates);

    /**
     * Returns the picker of {@code candidates}, a snapshot's list for one model (not empty): what it
     * needs of the list is worked out here, once, not on each pick.
     */
    default Picker over(List<Node> candidates) {
        return nodes -> pick(nodes).orElseThrow();
    }

    /**
     * Returns the balancer that places requests by their affinity key, when this strategy does;
     * {@code null} for every strategy that ignores keys.
     */
    default AffinityBalancer byKey() {
        return null;
    }
}
