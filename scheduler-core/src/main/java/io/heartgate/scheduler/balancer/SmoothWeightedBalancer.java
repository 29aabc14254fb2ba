package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Smooth weighted round robin, exactly as nginx does it: each pick adds every candidate's weight to
 * its current weight, takes the largest (the first in node-id order on ties) and subtracts the total
 * weight from the winner. Weights a=5, b=1, c=1 give {@code a a b a c a a} per seven picks; weights
 * a=1, b=2, c=5 give {@code c b c a c c b c} per eight.
 *
 * <p>A pick is a loop over two flat arrays (weights and current weights) cached per candidate list,
 * by identity: the table hands out the same list objects until it publishes a change. Current
 * weights are keyed by node id, so they survive table changes: when a new list shows up, the cached
 * states are written back to the by-id map (the most recently used last, so it wins) and the new
 * state is loaded from it, once per list. A node's current weight is shared by every model's list it
 * is in. One lock guards it all.
 */
final class SmoothWeightedBalancer implements Balancer {

    private final Map<String, Long> currentById = new HashMap<>();
    private final Map<List<Node>, State> states = new IdentityHashMap<>();
    private long picks;

    private static final class State {
        final List<Node> nodes;
        final int[] weights;
        final long[] current;
        final int total;
        long lastUsed;

        State(List<Node> nodes, Map<String, Long> currentById) {
            this.nodes = nodes;
            this.weights = new int[nodes.size()];
            this.current = new long[nodes.size()];
            int sum = 0;
            for (int i = 0; i < weights.length; i++) {
                Node n = nodes.get(i);
                weights[i] = n.weight();
                current[i] = currentById.getOrDefault(n.id(), 0L);
                sum += weights[i];
            }
            this.total = sum;
        }

        void writeBack(Map<String, Long> currentById) {
            for (int i = 0; i < current.length; i++) {
                currentById.put(nodes.get(i).id(), current[i]);
            }
        }
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
        synchronized (this) {
            State s = states.get(candidates);
            if (s == null) {
                s = newState(candidates);
            }
            s.lastUsed = ++picks;
            int[] weights = s.weights;
            long[] current = s.current;
            int best = 0;
            long bestWeight = Long.MIN_VALUE;
            for (int i = 0; i < weights.length; i++) {
                long c = current[i] + weights[i];
                current[i] = c;
                if (c > bestWeight) {
                    bestWeight = c;
                    best = i;
                }
            }
            current[best] -= s.total;
            return Optional.of(candidates.get(best));
        }
    }

    private State newState(List<Node> candidates) {
        // Oldest first, so the most recently used state of a node wins. A new list usually means a
        // new table snapshot, which makes every cached list obsolete: start the cache afresh.
        states.values().stream()
                .sorted(java.util.Comparator.comparingLong(st -> st.lastUsed))
                .forEach(st -> st.writeBack(currentById));
        states.clear();
        if (currentById.size() > 4 * candidates.size() + 1024) {
            // Forget nodes that left long ago; those in this list keep their state.
            Map<String, Long> keep = new HashMap<>();
            for (Node node : candidates) {
                Long c = currentById.get(node.id());
                if (c != null) {
                    keep.put(node.id(), c);
                }
            }
            currentById.clear();
            currentById.putAll(keep);
        }
        State s = new State(candidates, currentById);
        states.put(candidates, s);
        return s;
    }
}
