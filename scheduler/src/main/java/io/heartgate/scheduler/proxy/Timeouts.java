package io.heartgate.scheduler.proxy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * Enforces the first-byte and idle timeouts of one event loop's exchanges with one periodic sweep
 * instead of a timer per request: scheduling and cancelling a timer per request cost the proxy a
 * measurable share of its CPU. First-byte deadlines are "send time + a constant", so they sit in a
 * FIFO queue in deadline order and the sweep only looks at its head; responses being relayed sit
 * in a list threaded through the exchanges themselves (no hashing or node allocated per request)
 * and are checked for idleness once a second. Event-loop confined.
 */
final class Timeouts {

    private record Pending(Exchange exchange, int attempt, long deadlineMs) {
    }

    private final LongSupplier nanoTicker;
    private final long firstByteMs;
    private final long idleMs;
    private final ArrayDeque<Pending> awaitingHead = new ArrayDeque<>();
    /** Ends of the list of exchanges being relayed, linked through their relay fields. */
    private Exchange relayingFirst;
    private Exchange relayingLast;
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

    /** Watches a response being relayed for idleness; at most once per exchange until {@link #done}. */
    void relaying(Exchange e) {
        e.relayPrev = relayingLast;
        e.relayNext = null;
        if (relayingLast == null) {
            relayingFirst = e;
        } else {
            relayingLast.relayNext = e;
        }
        relayingLast = e;
        e.relayLinked = true;
    }

    /** Stops watching a finished response; does nothing for one not watched. */
    void done(Exchange e) {
        if (!e.relayLinked) {
            return;
        }
        e.relayLinked = false;
        if (e.relayPrev == null) {
            relayingFirst = e.relayNext;
        } else {
            e.relayPrev.relayNext = e.relayNext;
        }
        if (e.relayNext == null) {
            relayingLast = e.relayPrev;
        } else {
            e.relayNext.relayPrev = e.relayPrev;
        }
        e.relayPrev = null;
        e.relayNext = null;
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
            for (Exchange e = relayingFirst; e != null; e = e.relayNext) {
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
