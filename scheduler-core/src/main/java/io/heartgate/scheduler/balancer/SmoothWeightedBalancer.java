package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.table.Node;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Smooth weighted round robin, exactly as nginx does it: each pick adds every candidate's weight to
 * its current weight, takes the largest (the first in node-id order on ties) and subtracts the total
 * weight from the winner. Weights a=5, b=1, c=1 give {@code a a b a c a a} per seven picks; weights
 * a=1, b=2, c=5 give {@code c b c a c c b c} per eight.
 *
 * <p>That sequence repeats every total-weight picks, so a snapshot's {@link #over picker} works it
 * out once and then only steps one shared counter through it: no lock, nothing looked up. The
 * counter is the balancer's, so a new snapshot with the same nodes and weights goes on where the
 * last one stopped, and one with others goes on at the same point of its own sequence. A list made
 * for one request ({@link #pick}), and a snapshot's list whose sequence would be long to hold or to
 * work out (past {@value #SEQUENCE_UP_TO} picks, or {@value #WORK_UP_TO} steps), get the same
 * proportions without the smoothing: the counter's place in the total weight, laid out node by node
 * (a binary search in the snapshot's case). A list made for one request of more than
 * {@value #WINDOW} nodes is read in windows of near-equal size, at most that many each, taken in
 * turn: a pick reads a bounded number of nodes however long the list, and the shares stay the
 * weights' to within how much the windows' total weights differ.
 */
final class SmoothWeightedBalancer implements Balancer {

    /** The longest sequence a picker holds (4 bytes a step). */
    static final int SEQUENCE_UP_TO = 1 << 16;
    /** The most steps (sequence length times nodes) spent working a sequence out, once per snapshot and model. */
    static final long WORK_UP_TO = 1L << 22;
    /** The most nodes of a list made for one request that one pick reads. */
    static final int WINDOW = 2048;

    private final AtomicLong counter = new AtomicLong();

    @Override
    public Optional<Node> pick(List<Node> candidates) {
        int n = candidates.size();
        if (n <= 1) {
            return n == 0 ? Optional.empty() : Optional.of(candidates.get(0));
        }
        long c = counter.getAndIncrement();
        int from = 0;
        int to = n;
        if (n > WINDOW) { // windows of near-equal size, so each one's equal turn is its nodes' due
            int windows = (n + WINDOW - 1) / WINDOW;
            int w = (int) Math.floorMod(c, (long) windows);
            from = (int) ((long) w * n / windows);
            to = (int) ((long) (w + 1) * n / windows);
            c = Math.floorDiv(c, windows);
        }
        long total = 0;
        for (int i = from; i < to; i++) {
            total += candidates.get(i).weight();
        }
        return Optional.of(candidates.get(byShare(candidates, from, to, Math.floorMod(c, total))));
    }

    /** Returns the index, within {@code [from, to)}, of the node whose share of their total weight holds {@code at}. */
    private static int byShare(List<Node> nodes, int from, int to, long at) {
        long sum = 0;
        for (int i = from; i < to; i++) {
            sum += nodes.get(i).weight();
            if (at < sum) {
                return i;
            }
        }
        return to - 1;
    }

    @Override
    public Picker over(List<Node> candidates) {
        long total = 0;
        for (Node n : candidates) {
            total += n.weight();
        }
        if (candidates.size() == 1) {
            return nodes -> nodes.get(0);
        }
        if (total > SEQUENCE_UP_TO || total * candidates.size() > WORK_UP_TO) {
            long[] upTo = new long[candidates.size()]; // each node's share ends here, laid out in order
            long sum = 0;
            for (int i = 0; i < upTo.length; i++) {
                sum += candidates.get(i).weight();
                upTo[i] = sum;
            }
            long all = sum;
            return nodes -> {
                int i = Arrays.binarySearch(upTo, Math.floorMod(counter.getAndIncrement(), all));
                return nodes.get(i >= 0 ? i + 1 : -i - 1);
            };
        }
        int[] sequence = sequence(candidates, (int) total);
        return nodes -> nodes.get(sequence[(int) Math.floorMod(counter.getAndIncrement(), (long) sequence.length)]);
    }

    /** Returns nginx's smooth order of {@code nodes} over one cycle of {@code total} picks. */
    static int[] sequence(List<Node> nodes, int total) {
        int n = nodes.size();
        long[] current = new long[n];
        int[] order = new int[total];
        for (int step = 0; step < total; step++) {
            int best = 0;
            long bestWeight = Long.MIN_VALUE;
            for (int i = 0; i < n; i++) {
                current[i] += nodes.get(i).weight();
                if (current[i] > bestWeight) {
                    bestWeight = current[i];
                    best = i;
                }
            }
            current[best] -= total;
            order[step] = best;
        }
        return order;
    }
}
