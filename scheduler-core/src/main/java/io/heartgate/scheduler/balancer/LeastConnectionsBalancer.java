package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Picks the node with the fewest of this scheduler's requests in flight relative to its weight
 * (compared as {@code inFlightA * weightB < inFlightB * weightA}, without division). The scan starts
 * at a rotating offset and only a strictly better node replaces the current best, so ties go round
 * in turn rather than always to the first node.
 *
 * <p>For each candidate list (cached by identity) the weights and the locations of the in-flight
 * counts are copied into flat arrays once, so a scan over thousands of nodes reads contiguous
 * memory instead of chasing a pointer per node. Counts are read with opaque (not volatile) loads:
 * a pick is a heuristic and needs no ordering with other memory.
 */
final class LeastConnectionsBalancer implements Balancer {

    private static final int CACHED_LISTS = 8;

    private final AtomicLong rotation;
    private volatile Cached[] cache = new Cached[0];

    private record Layout(int[] weights, AtomicIntegerArray[] chunks, int[] indexes) {
        static Layout of(List<Node> nodes) {
            int n = nodes.size();
            int[] weights = new int[n];
            AtomicIntegerArray[] chunks = new AtomicIntegerArray[n];
            int[] indexes = new int[n];
            for (int i = 0; i < n; i++) {
                Node node = nodes.get(i);
                weights[i] = node.weight();
                chunks[i] = node.inFlight().chunk();
                indexes[i] = node.inFlight().index();
            }
            return new Layout(weights, chunks, indexes);
        }
    }

    LeastConnectionsBalancer(long start) {
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
        Layout layout = layout(candidates);
        int[] weights = layout.weights;
        AtomicIntegerArray[] chunks = layout.chunks;
        int[] indexes = layout.indexes;
        int start = (int) Math.floorMod(rotation.getAndIncrement(), (long) n);
        int best = start;
        long bestInFlight = chunks[start].getOpaque(indexes[start]);
        long bestWeight = weights[start];
        for (int i = start + 1; i < n; i++) {
            long inFlight = chunks[i].getOpaque(indexes[i]);
            if (inFlight * bestWeight < bestInFlight * weights[i]) {
                best = i;
                bestInFlight = inFlight;
                bestWeight = weights[i];
            }
        }
        for (int i = 0; i < start; i++) {
            long inFlight = chunks[i].getOpaque(indexes[i]);
            if (inFlight * bestWeight < bestInFlight * weights[i]) {
                best = i;
                bestInFlight = inFlight;
                bestWeight = weights[i];
            }
        }
        return Optional.of(candidates.get(best));
    }

    private Layout layout(List<Node> candidates) {
        Cached[] cache = this.cache;
        for (Cached c : cache) {
            if (c.list == candidates) {
                return c.layout;
            }
        }
        // Copy-on-write, lock-free for readers; two threads racing on a new list both build it, harmless.
        Layout layout = Layout.of(candidates);
        Cached[] grown = new Cached[Math.min(cache.length + 1, CACHED_LISTS)];
        grown[0] = new Cached(candidates, layout);
        System.arraycopy(cache, 0, grown, 1, grown.length - 1);
        this.cache = grown;
        return layout;
    }

    private record Cached(List<Node> list, Layout layout) {
    }
}
