package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Picks in turn, in node-id order: with candidates a, b, c it picks a b c a b c. The counter is a
 * long taken modulo the list size, so it never overflows in practice and a table change only shifts
 * where the rotation continues.
 */
final class RoundRobinBalancer implements Balancer {

    private final AtomicLong counter;

    RoundRobinBalancer(long start) {
        this.counter = new AtomicLong(start);
    }

    @Override
    public Optional<Node> pick(List<Node> candidates) {
        int n = candidates.size();
        if (n == 0) {
            return Optional.empty();
        }
        return Optional.of(candidates.get((int) Math.floorMod(counter.getAndIncrement(), (long) n)));
    }
}
