package io.heartgate.scheduler.proxy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Enforces the first-byte and idle timeouts of one event loop's exchanges with one periodic sweep
 * instead of a timer per request: scheduling and cancelling a timer per request cost the proxy a
 * measurable share of its CPU. First-byte deadlines are "send time + a constant", so they sit in a
 * FIFO queue in deadline order and the sweep only looks at its head; streams being relayed are
 * checked for idleness once a second. Event-loop confined.
 */
final class Timeouts {

    private record Pending(Exchange exchange, int attempt, long deadlineMs) {
    }

    private final LongSupplier nanoTicker;
    private final long firstByteMs;
    private final long idleMs;
    private final ArrayDeque<Pending> awaitingHead = new ArrayDeque<>();
    private final Set<Exchange> relaying = new LinkedHashSet<>();
    private long nowMs;
    private long nextIdleCheckMs;

    Timeouts(LongSupplier nanoTicker, long firstByteMs, long idleMs) {
        this.nanoTicker = nanoTicker;
        this.firstByteMs = firstByteMs;
        this.idleMs = idleMs;
        this.nowMs = nanoTicker.getAsLong() / 1_000_000;
    }

    /** Returns the time of the last sweep, in ms; coarse, but free to read per chunk. */
    long nowMs() {
        return nowMs;
    }

    /** Starts the first-byte clock of an attempt. */
    void awaitHead(Exchange e, int attempt) {
        awaitingHead.addLast(new Pending(e, attempt, nanoTicker.getAsLong() / 1_000_000 + firstByteMs));
    }

    /** Watches a response being relayed for idleness. */
    void relaying(Exchange e) {
        relaying.add(e);
    }

    /** Stops watching a finished response. */
    void done(Exchange e) {
        relaying.remove(e);
    }

    /** Runs one sweep; called every 100 ms on the event loop. */
    void sweep() {
        nowMs = nanoTicker.getAsLong() / 1_000_000;
        while (!awaitingHead.isEmpty()) {
            Pending p = awaitingHead.peekFirst();
            if (!p.exchange().waitingForHead(p.attempt())) {
                awaitingHead.pollFirst();
                continue;
            }
            if (p.deadlineMs() > nowMs) {
                break;
            }
            awaitingHead.pollFirst();
            p.exchange().firstByteTimedOut();
        }
        if (nowMs >= nextIdleCheckMs) {
            nextIdleCheckMs = nowMs + 1000;
            List<Exchange> idle = null;
            for (Exchange e : relaying) {
                if (nowMs - e.lastChunkMs() > idleMs) {
                    if (idle == null) {
                        idle = new ArrayList<>();
                    }
                    idle.add(e);
                }
            }
            if (idle != null) {
                idle.forEach(Exchange::idleTimedOut);
            }
        }
    }
}
