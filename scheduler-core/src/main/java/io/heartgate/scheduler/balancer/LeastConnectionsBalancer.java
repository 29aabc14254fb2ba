package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Picks the node with the fewest of this scheduler's requests in flight relative to its weight
 * (compared as {@code inFlightA * weightB < inFlightB * weightA}, without division); of busy nodes
 * equally loaded, the heavier, which one more request loads least. The scan starts at a rotating
 * offset and only a better node replaces the current best, so ties go round in turn rather than
 * always to the first node.
 *
 * <p>Two rules keep a pick cheap in a large fleet without changing what it picks where it matters:
 * a node with nothing in flight ends the scan, since nothing after it can be strictly better (the
 * pick is the one a full scan would make); and a scan reads at most {@value #SCAN_UP_TO} candidates
 * from its rotating start, so with more candidates than that, all busy, the pick is the least busy
 * of that window: a pick reads a bounded number of counts however large the fleet, and since the
 * window moves on with every pick the shares still follow the weights.
 *
 * <p>A snapshot's {@link #over picker} copies the list's weights and the locations of its in-flight
 * counts into flat arrays once, so a scan reads contiguous memory instead of chasing a pointer per
 * node; a list made for one request ({@link #pick}) is scanned node by node. Counts are read with
 * opaque (not volatile) loads: a pick is a heuristic and needs no ordering with other memory.
 */
final class LeastConnectionsBalancer implements Balancer {

    /** The most candidates one pick reads. */
    static final int SCAN_UP_TO = 2048;

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
        for (int k = 1, reads = Math.min(n, SCAN_UP_TO); k < reads && bestInFlight > 0; k++) {
            int i = start + k < n ? start + k : start + k - n;
            Node c = candidates.get(i);
            long inFlight = c.inFlight().get();
            if (better(inFlight, c.weight(), bestInFlight, bestWeight)) {
                best = i;
                bestInFlight = inFlight;
                bestWeight = c.weight();
            }
        }
        return Optional.of(candidates.get(best));
    }

    /**
     * Says whether a node with {@code inFlight} requests at {@code weight} beats the best so far:
     * fewer relative to weight, or, both busy and equally loaded, heavier, since one more request
     * then raises its load the least. (Free nodes tie and go in turn.)
     */
    private static boolean better(long inFlight, long weight, long bestInFlight, long bestWeight) {
        long mine = inFlight * bestWeight;
        long theirs = bestInFlight * weight;
        return mine < theirs || mine == theirs && inFlight > 0 && weight > bestWeight;
    }

    @Override
    public Picker over(List<Node> candidates) {
        if (candidates.size() == 1) {
            return nodes -> nodes.get(0);
        }
        return new Layout(candidates);
    }

    /** One snapshot list's weights and in-flight counts, laid out flat. */
    private final class Layout implements Picker {
        private final int[] weights;
        private final AtomicIntegerArray[] chunks;
        private final int[] indexes;

        Layout(List<Node> nodes) {
            int n = nodes.size();
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
        public Node pick(List<Node> nodes) {
            int n = weights.length;
            int start = (int) Math.floorMod(rotation.getAndIncrement(), (long) n);
            int best = start;
            long bestInFlight = chunks[start].getOpaque(indexes[start]);
            long bestWeight = weights[start];
            int end = Math.min(n, start + SCAN_UP_TO);
            for (int i = start + 1; i < end && bestInFlight > 0; i++) {
                long inFlight = chunks[i].getOpaque(indexes[i]);
                if (better(inFlight, weights[i], bestInFlight, bestWeight)) {
                    best = i;
                    bestInFlight = inFlight;
                    bestWeight = weights[i];
                }
            }
            int wrapEnd = Math.min(start, SCAN_UP_TO - (end - start));
            for (int i = 0; i < wrapEnd && bestInFlight > 0; i++) {
                long inFlight = chunks[i].getOpaque(indexes[i]);
                if (better(inFlight, weights[i], bestInFlight, bestWeight)) {
                    best = i;
                    bestInFlight = inFlight;
                    bestWeight = weights[i];
                }
            }
            return nodes.get(best);
        }
    }
}
