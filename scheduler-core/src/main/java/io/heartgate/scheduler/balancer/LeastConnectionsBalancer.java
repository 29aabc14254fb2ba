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
 * <p>A snapshot's {@link #over picker} copies the list's weights and the locations of its in-flight
 * counts into flat arrays once, so a scan over thousands of nodes reads contiguous memory instead
 * of chasing a pointer per node; a list made for one request ({@link #pick}) is scanned node by node.
 * Counts are read with opaque (not volatile) loads: a pick is a heuristic and needs no ordering with
 * other memory.
 */
final class LeastConnectionsBalancer implements Balancer {

    private final AtomicLong rotation;

    LeastConnectionsBalancer(long start) {
        this.rotation = new AtomicLong(start);
    }

    @Override
    public Optional<Node> pick(List<Node> candidates) {
        int n = candidates.size();
        if (n <= 1) {
            return n == 0 ? Optional.empty() : Optional.of(candidates.get(0));
        }
        int start = (int) Math.floorMod(rotation.getAndIncrement(), (long) n);
        int best = start;
        long bestInFlight = candidates.get(start).inFlight().get();
        long bestWeight = candidates.get(start).weight();
        for (int k = 1; k < n; k++) {
            int i = (start + k) % n;
            Node c = candidates.get(i);
            long inFlight = c.inFlight().get();
            if (inFlight * bestWeight < bestInFlight * c.weight()) {
                best = i;
                bestInFlight = inFlight;
                bestWeight = c.weight();
            }
        }
        return Optional.of(candidates.get(best));
    }

    @Override
    public Picker over(List<Node> candidates) {
        if (candidates.size() == 1) {
            Node only = candidates.get(0);
            return () -> only;
        }
        return new Layout(candidates);
    }

    /** One snapshot list's weights and in-flight counts, laid out flat. */
    private final class Layout implements Picker {
        private final List<Node> nodes;
        private final int[] weights;
        private final AtomicIntegerArray[] chunks;
        private final int[] indexes;

        Layout(List<Node> nodes) {
            int n = nodes.size();
            this.nodes = nodes;
            this.weights = new int[n];
            this.chunks = new AtomicIntegerArray[n];
            this.indexes = new int[n];
            for (int i = 0; i < n; i++) {
                Node node = nodes.get(i);
                weights[i] = node.weight();
                chunks[i] = node.inFlight().chunk();
                indexes[i] = node.inFlight().index();
            }
        }

        @Override
        public Node pick() {
            int n = weights.length;
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
            return nodes.get(best);
        }
    }
}
