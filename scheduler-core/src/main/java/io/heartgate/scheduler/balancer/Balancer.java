package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;

/**
 * Picks the node for one request among candidates the table already filtered (routable, serving the
 * requested model, in node-id order). Knows nothing of HTTP or Kafka. Implementations are
 * thread-safe: many request threads pick at once.
 */
public interface Balancer {

    /** Returns one of {@code candidates}; empty exactly when {@code candidates} is empty. */
    Optional<Node> pick(List<Node> candidates);

    /**
     * Returns the balancer that places requests by their affinity key, when this strategy does;
     * {@code null} for every strategy that ignores keys.
     */
    default AffinityBalancer byKey() {
        return null;
    }
}
