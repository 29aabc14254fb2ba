package io.heartgate.scheduler.balancer;

import io.heartgate.protocol.Load;
import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;
import java.util.random.RandomGenerator;

/**
 * Power of two choices: draws two different candidates at random and picks the one with the lower
 * load score (the first drawn on ties). Comparing two random nodes instead of scanning all keeps a
 * pick constant-time and avoids the herd effect of every scheduler replica sending its next requests
 * to the same "least loaded" node between two heartbeats.
 *
 * <p>{@code score = (max(localInFlight, reportedInFlight) + reportedQueued + 1) * (1 + kvCacheUsage) / weight}:
 * this scheduler's in-flight count reacts at once, the node's reported figures add what other
 * replicas and clients send it, and a nearly full KV cache doubles the score. Missing figures count
 * as zero.
 */
final class LeastLoadedBalancer implements Balancer {

    private final RandomGenerator random;

    LeastLoadedBalancer(RandomGenerator random) {
        this.random = random;
    }

    @Override
    public Optional<Node> pick(List<Node> candidates) {
        int n = candidates.size();
        if (n == 0) {
            return Optional.empty();
        }
        if (n == 1) {
            return Optional.of(candidates.get(0));
        }
        int i = random.nextInt(n);
        int j = random.nextInt(n - 1);
        if (j >= i) {
            j++;
        }
        Node a = candidates.get(i);
        Node b = candidates.get(j);
        return Optional.of(score(b) < score(a) ? b : a);
    }

    /** Returns the load score of a node; lower is better. */
    static double score(Node node) {
        Load load = node.heartbeat().load();
        int local = node.inFlight().get();
        int reported = load.inFlight() == null ? 0 : load.inFlight();
        int queued = load.queued() == null ? 0 : load.queued();
        double kv = load.kvCacheUsage() == null ? 0.0 : load.kvCacheUsage();
        return (Math.max(local, reported) + queued + 1) * (1.0 + kv) / node.weight();
    }
}
