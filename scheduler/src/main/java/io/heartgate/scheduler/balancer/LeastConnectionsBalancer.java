package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Picks the node with the fewest of this scheduler's requests in flight relative to its weight
 * (compared as {@code inFlightA * weightB < inFlightB * weightA}, without division). The scan starts
 * at a rotating offset and only a strictly better node replaces the current best, so ties go round
 * in turn rather than always to the first node.
 */
final class LeastConnectionsBalancer implements Balancer {

    private final AtomicLong rotation;

    LeastConnectionsBalancer(long start) {
        this.rotation = new AtomicLong(start);
    }

    @Override
    public Optional<Node> pick(List<Node> candidates) {
        int n = candidates.size();
        if (n == 0) {
            return Optional.empty();
        }
        int start = (int) Math.floorMod(rotation.getAndIncrement(), (long) n);
        Node best = candidates.get(start);
        long bestInFlight = best.inFlight().get();
        for (int k = 1; k < n; k++) {
            Node node = candidates.get((start + k) % n);
            long inFlight = node.inFlight().get();
            if (inFlight * best.weight() < bestInFlight * node.weight()) {
                best = node;
                bestInFlight = inFlight;
            }
        }
        return Optional.of(best);
    }
}
