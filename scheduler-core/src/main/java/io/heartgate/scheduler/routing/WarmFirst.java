package io.heartgate.scheduler.routing;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.table.Node;
import java.util.ArrayList;
import java.util.List;

/**
 * Warm first: narrows the candidates for a request naming a model to the nodes that have it in memory,
 * because such a node answers in milliseconds where one that must load the model first takes seconds
 * to minutes (Ollama loads on demand and evicts). The strategy then chooses among what is left.
 *
 * <p>A node is warm for a model when its latest heartbeat lists the model loaded ({@link
 * Node#holdsInMemory}), when requests this scheduler sent it for the model while it was cold are still
 * in flight (it is loading the model: the next requests had better queue behind that one load than
 * start another on a second node), or when it answered a request for the model on this scheduler
 * after that heartbeat's probe could have seen it: heartbeats lag by up to one interval, and a node
 * that just answered has just loaded (two intervals: an agent whose probe ran late sends the previous
 * one again). Every candidate stays when none is warm, or when even the least
 * busy warm candidate has more than {@code maxLoad} requests more in flight than the least busy cold
 * one, so that one warm node never takes the whole fleet's traffic. Among cold candidates, those with
 * free memory for the model are preferred, when some have and some have not: by the free GPU memory
 * and the model size the node reports, or, for a node that reports no GPU figures, by its saying it
 * holds no model at all (and this scheduler sent it none to load), so that a load does not evict a
 * model another request needs. Pure but for reading the nodes' shared counters; allocates only when
 * it narrows the list.
 *
 * @param enabled whether to narrow at all ({@code --warm-first})
 * @param maxLoad how many more requests in flight a warm node may have than the least busy cold one
 *     ({@code --warm-max-load})
 */
public record WarmFirst(boolean enabled, int maxLoad) {

    /** Leaves the candidates as they are. */
    public static final WarmFirst OFF = new WarmFirst(false, 0);

    private static final long MIB = 1024L * 1024;

    /** Checks the range of {@code maxLoad}. */
    public WarmFirst {
        if (maxLoad < 0 || maxLoad > 1_000_000) {
            throw new InvalidSettingException("warmMaxLoad", "must be 0 to 1000000, was " + maxLoad);
        }
    }

    /**
     * Returns the candidates to pick among for {@code normalizedModel}: {@code candidates} itself or a
     * subset of it, never empty when it is not.
     */
    public List<Node> prefer(List<Node> candidates, String normalizedModel) {
        return prefer(candidates, normalizedModel, null);
    }

    /**
     * As {@link #prefer(List, String)}, returning {@code previous} itself when the subset has exactly
     * its nodes, in order, so that a caller keeping it allocates nothing while the subset stays.
     */
    public List<Node> prefer(List<Node> candidates, String normalizedModel, List<Node> previous) {
        if (!enabled || normalizedModel == null || candidates.size() < 2) {
            return candidates;
        }
        int warm = 0;
        int leastBusyWarm = Integer.MAX_VALUE;
        int leastBusyCold = Integer.MAX_VALUE;
        for (int i = 0; i < candidates.size(); i++) {
            Node n = candidates.get(i);
            if (isWarm(n, normalizedModel)) {
                warm++;
                leastBusyWarm = Math.min(leastBusyWarm, busy(n));
            } else {
                leastBusyCold = Math.min(leastBusyCold, busy(n));
            }
        }
        if (warm == candidates.size()) {
            return candidates;
        }
        if (warm == 0) {
            int roomy = 0;
            for (int i = 0; i < candidates.size(); i++) {
                if (hasRoom(candidates.get(i), normalizedModel)) {
                    roomy++;
                }
            }
            return roomy == 0 || roomy == candidates.size() ? candidates
                    : subset(candidates, normalizedModel, false, roomy, previous);
        }
        if ((long) leastBusyWarm > (long) leastBusyCold + maxLoad) {
            return candidates;
        }
        return subset(candidates, normalizedModel, true, warm, previous);
    }

    /**
     * Returns the {@code size} candidates that are warm ({@code warmOnes}) or have room for the model:
     * {@code previous} when it holds just those, else a new list.
     */
    private static List<Node> subset(List<Node> candidates, String model, boolean warmOnes, int size,
                                     List<Node> previous) {
        if (previous != null && previous.size() == size) {
            int j = 0;
            for (int i = 0; i < candidates.size() && j <= size; i++) {
                Node n = candidates.get(i);
                if (warmOnes ? isWarm(n, model) : hasRoom(n, model)) {
                    if (j == size || previous.get(j) != n) {
                        j = -1;
                        break;
                    }
                    j++;
                }
            }
            if (j == size) {
                return previous;
            }
        }
        List<Node> out = new ArrayList<>(size);
        for (int i = 0; i < candidates.size(); i++) {
            Node n = candidates.get(i);
            if (warmOnes ? isWarm(n, model) : hasRoom(n, model)) {
                out.add(n);
            }
        }
        return List.copyOf(out);
    }

    /**
     * Says whether {@code node} has {@code normalizedModel} in memory, or soon will, as far as this
     * scheduler knows: its heartbeat says so, requests this scheduler sent for the model while the
     * node was cold are still in flight (it is loading the model for them), or it answered for the
     * model less than two intervals before that heartbeat was seen.
     */
    public static boolean isWarm(Node node, String normalizedModel) {
        if (node.holdsInMemory(normalizedModel) || node.inFlight().loading(normalizedModel) > 0) {
            return true;
        }
        return newerThanHeartbeat(node, node.inFlight().servedAtMs(normalizedModel));
    }

    /**
     * Says whether an answer at {@code servedMs} may postdate what the node's latest heartbeat shows:
     * heartbeats are probed up to an interval before they are sent, and an agent whose probe ran late
     * sends the one before again, so only a heartbeat seen two intervals after the answer surely saw it.
     */
    private static boolean newerThanHeartbeat(Node node, long servedMs) {
        return servedMs != Long.MIN_VALUE
                && servedMs + 2L * node.heartbeat().intervalMs() >= node.lastSeen().toEpochMilli();
    }

    /**
     * Returns how busy a node is in requests: the larger of this scheduler's count in flight and the
     * node's reported one, plus the requests it reports queued.
     */
    static int busy(Node node) {
        Integer reported = node.heartbeat().load().inFlight();
        Integer queued = node.heartbeat().load().queued();
        return Math.max(node.inFlight().get(), reported == null ? 0 : reported) + (queued == null ? 0 : queued);
    }

    /**
     * Says whether the node has memory free for the model: reported free GPU memory at least the size
     * it reports for the model, or, without GPU figures, no model in memory, none being loaded and
     * none answered for since its heartbeat.
     */
    static boolean hasRoom(Node node, String normalizedModel) {
        if (node.inFlight().loadingAny()) {
            return false; // its free memory is being filled for this scheduler's requests already
        }
        long freeMiB = node.freeGpuMemoryMiB();
        if (freeMiB < 0) {
            return node.holdsNothing() && !newerThanHeartbeat(node, node.inFlight().lastServedAtMs());
        }
        long size = node.modelSizeBytes(normalizedModel);
        return size >= 0 && freeMiB * MIB >= size;
    }
}
