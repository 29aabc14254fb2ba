package io.heartgate.scheduler.table;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * Hands out one {@link InFlight} slot per node id, in chunks of 1024 counts that are never moved or
 * reused. Writer thread only (the table's); the counters themselves are thread-safe.
 */
final class InFlightSlots {

    private static final int CHUNK = 1024;

    private final Map<String, InFlight> byId = new HashMap<>();
    private final List<AtomicIntegerArray> chunks = new ArrayList<>();
    private int next;

    InFlight forNode(String nodeId) {
        return byId.computeIfAbsent(nodeId, id -> {
            if (next % CHUNK == 0) {
                chunks.add(new AtomicIntegerArray(CHUNK));
            }
            InFlight slot = new InFlight(chunks.get(next / CHUNK), next % CHUNK);
            next++;
            return slot;
        });
    }
}
