package io.heartgate.scheduler.admission;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Which request a full {@link FairQueue} drops to make room for a newcomer (longest-queue drop): the
 * newest of the caller with the most waiting in the lowest class (of callers equally long, the one
 * whose newest came last, then the greater name), when that class is lower than the newcomer's, or
 * is the same and that caller has at least two more waiting than the newcomer's (so the newcomer
 * never ends up with more than the caller it pushed out). A caller that floods thus fills the queue
 * with its own backlog without locking the others out of it. Pure: it takes nothing out.
 */
final class LongestQueueDrop {

    private LongestQueueDrop() {
    }

    /**
     * Returns the request to drop for a newcomer of {@code caller} in class {@code priority}, over
     * {@code parts} that share one bound as if they were one queue (a caller's requests counted, and
     * its newest found, across all of them), or {@code null} when the newcomer is to be refused.
     */
    static <T> FairQueue.Ticket<T> choose(List<FairQueue<T>> parts, String caller, int priority) {
        Integer lowest = null;
        for (FairQueue<T> part : parts) {
            Integer l = part.lowestClass();
            if (l != null && (lowest == null || l < lowest)) {
                lowest = l;
            }
        }
        if (lowest == null || lowest > priority) {
            return null;
        }
        Map<String, Integer> counts = new HashMap<>();
        Map<String, FairQueue.Ticket<T>> newest = new HashMap<>();
        for (FairQueue<T> part : parts) {
            part.eachCaller(lowest, (who, tickets) -> {
                counts.merge(who, tickets.size(), Integer::sum);
                newest.merge(who, tickets.peekLast(), (a, b) -> b.enqueuedNanos() > a.enqueuedNanos() ? b : a);
            });
        }
        String most = null;
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            if (most == null || e.getValue() > counts.get(most)
                    || e.getValue().equals(counts.get(most)) && newerCaller(e.getKey(), most, newest)) {
                most = e.getKey();
            }
        }
        if (lowest == priority && counts.get(most) < counts.getOrDefault(caller, 0) + 2) {
            return null;
        }
        return newest.get(most);
    }

    /** Of two callers equally long: the one whose newest came last, then (on one clock reading) the greater name. */
    private static <T> boolean newerCaller(String a, String b, Map<String, FairQueue.Ticket<T>> newest) {
        long ta = newest.get(a).enqueuedNanos();
        long tb = newest.get(b).enqueuedNanos();
        return ta != tb ? ta > tb : a.compareTo(b) > 0;
    }
}
