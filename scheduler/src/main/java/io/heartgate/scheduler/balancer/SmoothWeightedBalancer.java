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
 * <p>Current weights are kept per node id, so they survive table changes. To keep a pick free of map
 * lookups, the cells for each candidate list seen recently are cached by list identity (the table
 * hands out the same list objects until it publishes a change). One lock guards the state: a pick is
 * a short loop over an array.
 */
final class SmoothWeightedBalancer implements Balancer {

    private static final int CACHED_LISTS = 64;

    private final Map<String, long[]> currentById = new HashMap<>();
    private final Map<List<Node>, long[][]> cellsByList = new IdentityHashMap<>();

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
            long[][] cells = cellsByList.get(candidates);
            if (cells == null) {
                cells = cellsFor(candidates);
            }
            long total = 0;
            int best = -1;
            long bestWeight = Long.MIN_VALUE;
            for (int i = 0; i < n; i++) {
                int w = candidates.get(i).weight();
                long[] cell = cells[i];
                cell[0] += w;
                total += w;
                if (cell[0] > bestWeight) {
                    bestWeight = cell[0];
                    best = i;
                }
            }
            cells[best][0] -= total;
            return Optional.of(candidates.get(best));
        }
    }

    private long[][] cellsFor(List<Node> candidates) {
        if (cellsByList.size() >= CACHED_LISTS) {
            cellsByList.clear();
        }
        if (currentById.size() > 4 * candidates.size() + 1024) {
            // Forget nodes that left long ago; those in this list keep their state.
            Map<String, long[]> keep = new HashMap<>();
            for (Node node : candidates) {
                long[] cell = currentById.get(node.id());
                if (cell != null) {
                    keep.put(node.id(), cell);
                }
            }
            currentById.clear();
            currentById.putAll(keep);
            cellsByList.clear();
        }
        long[][] cells = new long[candidates.size()][];
        for (int i = 0; i < cells.length; i++) {
            cells[i] = currentById.computeIfAbsent(candidates.get(i).id(), id -> new long[1]);
        }
        cellsByList.put(candidates, cells);
        return cells;
    }
}
