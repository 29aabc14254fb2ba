package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;
import java.util.random.RandomGenerator;

/** Picks uniformly at random. */
final class RandomBalancer implements Balancer {

    private final RandomGenerator random;

    RandomBalancer(RandomGenerator random) {
        this.random = random;
    }

    @Override
    public Optional<Node> pick(List<Node> candidates) {
        int n = candidates.size();
        return n == 0 ? Optional.empty() : Optional.of(candidates.get(n == 1 ? 0 : random.nextInt(n)));
    }
}
