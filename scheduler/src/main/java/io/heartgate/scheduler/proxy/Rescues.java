package io.heartgate.scheduler.proxy;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gathers the requests every event loop moved off a node that stopped being routable, so that each
 * such node gets one log line with the total rather than one per loop: each loop reports what it
 * moved within a sweep of the change, and the batch is logged once it is older than that.
 * Thread-safe.
 */
final class Rescues {

    private static final Logger log = LoggerFactory.getLogger(Rescues.class);
    /** Longer than a sweep period, so that every loop's share is in the one line. */
    private static final long GATHER_MS = 300;

    private static final class Batch {
        final long firstMs;
        final String why;
        final AtomicInteger moved = new AtomicInteger();

        Batch(long firstMs, String why) {
            this.firstMs = firstMs;
            this.why = why;
        }
    }

    private final Map<String, Batch> batches = new ConcurrentHashMap<>();

    /** Notes that {@code count} requests left {@code node}, because {@code why}, at {@code nowMs}. */
    void moved(String node, int count, String why, long nowMs) {
        batches.computeIfAbsent(node, k -> new Batch(nowMs, why)).moved.addAndGet(count);
    }

    /** Logs the batches gathered for long enough; called by the sweeps. */
    void flush(long nowMs) {
        if (batches.isEmpty()) {
            return;
        }
        for (Map.Entry<String, Batch> e : batches.entrySet()) {
            Batch b = e.getValue();
            if (nowMs - b.firstMs >= GATHER_MS && batches.remove(e.getKey(), b)) { // one loop logs it, whole
                log.warn("Node {} stopped being routable ({}): {} requests waiting for its answer moved to other nodes",
                        e.getKey(), b.why, b.moved.get());
            }
        }
    }
}
