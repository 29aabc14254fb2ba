package io.heartgate.scheduler.balancer;

import io.heartgate.protocol.Load;
import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.random.RandomGenerator;

/**
 * Picks the node with the lowest load score. Up to {@value #SCAN_UP_TO} candidates, every one is
 * compared, starting at a rotating offset so that ties go round in turn: with few nodes, two random
 * choices often miss the one free node, and a scan of so few scores costs less than a wrong pick
 * (time to first token on a node with a queue). Above that, power of two choices: two candidates
 * drawn at random, the lower score wins, which keeps a pick constant-time over thousands of nodes and
 * keeps scheduler replicas from herding onto one "least loaded" node between heartbeats.
 *
 * <p>{@code score = (load + 1) * (1 + kvCacheUsage) / (weight * capacity)}: {@code load} is this
 * scheduler's requests in flight, which react at once, plus the work the node's heartbeat reported
 * beyond them (other replicas' and clients': {@link Node#load()}); {@code capacity} is the node's slot
 * count where it reports one, else 1, so a node with twice the slots takes twice the requests; a
 * nearly full KV cache doubles the score. Missing figures count as zero.
 */
final class LeastLoadedBalancer implements Balancer {

    /** The most candidates compared one by one; more are sampled two at a time. */
    static final int SCAN_UP_TO = 32;

    private final RandomGenerator random;
    private final AtomicLong rotation;

    LeastLoadedBalancer(RandomGenerator random, long start) {
        this.random = random;
        this.rotation = new AtomicLong(start);
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
        if (n <= SCAN_UP_TO) {
            int start = (int) Math.floorMod(rotation.getAndIncrement(), (long) n);
            Node best = candidates.get(start);
            double bestScore = score(best);
            for (int k = 1; k < n; k++) {
                Node c = candidates.get((start + k) % n);
                double s = score(c);
                if (s < bestScore) {
                    best = c;
                    bestScore = s;
                }
            }
            return Optional.of(best);
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
        double kv = load.kvCacheUsage() == null ? 0.0 : load.kvCacheUsage();
        int slots = Math.max(1, node.capacity());
        return (node.load() + 1) * (1.0 + kv) / ((double) node.weight() * slots);
    }
}
