package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.time.Ticker;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Enforces the first-byte and idle timeouts of one event loop's exchanges with one periodic sweep
 * rather than a timer per request, which would cost a scheduling and a cancelling on every
 * request. Each exchange holds a {@link Watch}, its handle here. First-byte deadlines are "send time +
 * a constant", so they sit in a FIFO queue in deadline order and the sweep only looks at its head;
 * watches of responses being relayed form a linked list (no hashing per request) checked for
 * idleness once a second. Event-loop confined; time comes from the injected nanosecond ticker.
 */
final class Timeouts {

    /** The owner of a watch: what the sweep asks it and tells it. */
    interface Watched {
        /** Returns whether the owner still waits for the response head of its latest attempt. */
        boolean waitingForHead();

        /** No response head arrived within the first-byte timeout. */
        void firstByteTimedOut();

        /** Nothing was relayed for longer than the idle timeout. */
        void idleTimedOut();

        /** Returns the id of the node whose response head the owner awaits, or {@code null}. */
        String awaitedNode();

        /** Returns the (normalised) model the owner's request names, or {@code null}. */
        String model();

        /**
         * Returns whether the owner's request streams, so that its first byte is its first token;
         * read only when asked (the stall rule, for requests that waited long).
         */
        boolean streams();

        /**
         * Returns whether the owner's latest attempt went to a node that had to load its model first
         * (as warm first tracks it), so that its silence is the load, not a stall.
         */
        default boolean waitsForLoad() {
            return false;
        }

        /**
         * The table stopped routing that node: the owner moves its request elsewhere and returns
         * {@code true}; with {@code onlyWithAlternative} (the node is only held out, not gone or DOWN)
         * it stays, returning {@code false}, when nowhere better is left for it.
         */
        boolean nodeLost(boolean onlyWithAlternative);

        /** Returns the id of the node whose answer the owner relays now, or {@code null}. */
        default String answeringNode() {
            return null;
        }

        /** The table stopped routing the node whose answer has gone silent: the owner gives up on it (it may move). */
        default void streamLost() {
        }
    }

    /** One exchange's handle: where it stands as far as timeouts go. */
    final class Watch {
        private final Watched owner;
        private Watch prev;
        private Watch next;
        /** Whether this watch is in the list of responses being relayed (list membership, not the owner's phase). */
        private boolean linked;
        private int attempt;
        private long lastChunkMs;

        private Watch(Watched owner) {
            this.owner = owner;
        }

        /** Starts the first-byte clock of a new attempt; an earlier attempt's clock no longer counts. */
        void awaitHead() {
            attempt++;
            pending.addLast(new Pending(this, attempt, ticker.millis() + firstByteMs));
        }

        /** Starts watching the response for idleness, its clock from now (linked once, however often called). */
        void relaying() {
            lastChunkMs = nowMs;
            if (linked) {
                return;
            }
            linked = true;
            prev = relayingLast;
            if (relayingLast == null) {
                relayingFirst = this;
            } else {
                relayingLast.next = this;
            }
            relayingLast = this;
        }

        /** Notes that a chunk was relayed just now. */
        void touch() {
            lastChunkMs = nowMs;
        }

        /** Stops watching; idempotent. */
        void done() {
            if (!linked) {
                return;
            }
            linked = false;
            if (prev == null) {
                relayingFirst = next;
            } else {
                prev.next = next;
            }
            if (next == null) {
                relayingLast = prev;
            } else {
                next.prev = prev;
            }
            prev = null;
            next = null;
        }
    }

    private record Pending(Watch watch, int attempt, long deadlineMs) {
    }

    private final Ticker ticker;
    private final Ticker coarse = Ticker.ofMillis(this::nowMs);
    private final long firstByteMs;
    private final long idleMs;
    private static final int MIN_COMPACT = 4096;

    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private int compactAbove = MIN_COMPACT;
    private Watch relayingFirst;
    private Watch relayingLast;
    private long nowMs;
    private long nextIdleCheckMs;

    Timeouts(Ticker ticker, long firstByteMs, long idleMs) {
        this.ticker = ticker;
        this.firstByteMs = firstByteMs;
        this.idleMs = idleMs;
        this.nowMs = ticker.millis();
    }

    /** Returns a new handle for {@code owner}. */
    Watch watch(Watched owner) {
        return new Watch(owner);
    }

    /** Returns the monotonic clock's time now, in ns: what latencies are measured with. */
    long nanoTime() {
        return ticker.nanos();
    }

    /** Returns the first-byte timeout, in ms. */
    long firstByteMs() {
        return firstByteMs;
    }

    /** Returns the loop's coarse clock: the time of its last sweep; free to read per chunk. */
    Ticker coarse() {
        return coarse;
    }

    /** Returns the time of the last sweep, in ms; coarse, but free to read per chunk. */
    long nowMs() {
        return nowMs;
    }

    /**
     * Gives up on answers relayed from a node the table stopped routing ({@code lost}) that sent
     * nothing for {@code silentMs}: its host died without closing the connection, and only the idle
     * timeout would end them. One still flowing (a leaving node finishing its streams) is left alone.
     */
    void rescueSilent(Predicate<String> lost, long silentMs) {
        List<Watched> silent = new ArrayList<>(0);
        for (Watch w = relayingFirst; w != null; w = w.next) {
            String node = nowMs - w.lastChunkMs >= silentMs ? w.owner.answeringNode() : null;
            if (node != null && lost.test(node)) {
                silent.add(w.owner);
            }
        }
        silent.forEach(Watched::streamLost); // after the walk: giving up unlinks the watch
    }

    /**
     * Tells every owner still awaiting a response head from a node that {@code lost} names to move
     * its request, only if it has somewhere better to go when {@code onlyWithAlternative} names the
     * node too; returns how many moved, by node id (empty when none did).
     */
    Map<String, Integer> rescue(Predicate<String> lost, Predicate<String> onlyWithAlternative) {
        List<Watched> moving = null;
        List<String> from = null;
        for (Pending p : pending) {
            Watch w = p.watch();
            if (w.attempt != p.attempt() || !w.owner.waitingForHead()) {
                continue;
            }
            String node = w.owner.awaitedNode();
            if (node != null && lost.test(node)) {
                if (moving == null) {
                    moving = new ArrayList<>();
                    from = new ArrayList<>();
                }
                moving.add(w.owner);
                from.add(node);
            }
        }
        if (moving == null) {
            return Map.of();
        }
        Map<String, Integer> moved = new HashMap<>();
        for (int i = 0; i < moving.size(); i++) { // after the loop: a retry adds to the queue
            String node = from.get(i);
            if (moving.get(i).nodeLost(onlyWithAlternative.test(node))) {
                moved.merge(node, 1, Integer::sum);
            }
        }
        return moved;
    }

    /**
     * Calls {@code each} with every owner still awaiting the response head of an attempt sent at or
     * before {@code sentByMs}, oldest first; it looks at no later entry.
     */
    void awaitingSince(long sentByMs, Consumer<Watched> each) {
        for (Pending p : pending) {
            if (p.deadlineMs() - firstByteMs > sentByMs) {
                return;
            }
            Watch w = p.watch();
            if (w.attempt == p.attempt() && w.owner.waitingForHead()) {
                each.accept(w.owner);
            }
        }
    }

    /** Returns the first-byte entries held, answered ones not yet dropped included (tests). */
    int pendingEntries() {
        return pending.size();
    }

    /** Runs one sweep; called every 100 ms on the event loop. */
    void sweep() {
        nowMs = ticker.millis();
        if (pending.size() > compactAbove) {
            // An old request still waiting at the head keeps every later, answered entry behind it;
            // drop those now and then so the queue holds about what waits, not every request since.
            pending.removeIf(p -> p.watch().attempt != p.attempt() || !p.watch().owner.waitingForHead());
            compactAbove = Math.max(MIN_COMPACT, 2 * pending.size());
        }
        while (!pending.isEmpty()) {
            Pending p = pending.peekFirst();
            Watch w = p.watch();
            if (w.attempt != p.attempt() || !w.owner.waitingForHead()) {
                pending.pollFirst();
                continue;
            }
            if (p.deadlineMs() > nowMs) {
                break;
            }
            pending.pollFirst();
            w.owner.firstByteTimedOut();
        }
        if (nowMs >= nextIdleCheckMs) {
            nextIdleCheckMs = nowMs + 1000;
            List<Watch> idle = null;
            for (Watch w = relayingFirst; w != null; w = w.next) {
                if (nowMs - w.lastChunkMs > idleMs) {
                    if (idle == null) {
                        idle = new ArrayList<>();
                    }
                    idle.add(w);
                }
            }
            if (idle != null) {
                for (Watch w : idle) {
                    w.owner.idleTimedOut();
                }
            }
        }
    }
}
