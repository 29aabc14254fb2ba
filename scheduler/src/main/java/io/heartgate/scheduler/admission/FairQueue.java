package io.heartgate.scheduler.admission;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * Holds the requests waiting for one model in the order they are to be served: a higher priority
 * class always first; within a class, the callers with requests waiting in turn, one request each
 * (a caller that floods waits behind itself, not in front of the others); within a caller, oldest
 * first. Bounded. Plain values and the caller's clock: no thread, no timer, not thread-safe (the
 * {@link GatewayQueue} guards it).
 *
 * @param <T> what waits
 */
public final class FairQueue<T> {

    /** One waiting request; the handle to take it out again (its client hung up). */
    public static final class Ticket<T> {
        private final T item;
        private final String caller;
        private final int priority;
        private final long enqueuedNanos;
        private final FairQueue<T> owner;
        private boolean queued = true;

        Ticket(FairQueue<T> owner, T item, String caller, int priority, long enqueuedNanos) {
            this.owner = owner;
            this.item = item;
            this.caller = caller;
            this.priority = priority;
            this.enqueuedNanos = enqueuedNanos;
        }

        public T item() {
            return item;
        }

        public String caller() {
            return caller;
        }

        public int priority() {
            return priority;
        }

        /** Returns when it joined the queue, on the queue's clock. */
        public long enqueuedNanos() {
            return enqueuedNanos;
        }

        /** Says whether it is still in the queue. */
        public boolean queued() {
            return queued;
        }
    }

    /** The callers of one priority class with requests waiting, and whose turn is next. */
    private static final class Level<T> {
        final Map<String, ArrayDeque<Ticket<T>>> byCaller = new HashMap<>();
        final ArrayDeque<String> turns = new ArrayDeque<>();
    }

    private final int capacity;
    /** Priority class (highest first) to its callers. */
    private final TreeMap<Integer, Level<T>> levels = new TreeMap<>((a, b) -> Integer.compare(b, a));
    /** Every ticket in the order it came, for the wait limit: all share one, so the oldest expire first. */
    private final LinkedHashSet<Ticket<T>> arrival = new LinkedHashSet<>();

    /** Creates an empty queue holding at most {@code capacity} requests. */
    public FairQueue(int capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity must not be negative, was " + capacity);
        }
        this.capacity = capacity;
    }

    /** Returns the requests waiting. */
    public int size() {
        return arrival.size();
    }

    public boolean isEmpty() {
        return arrival.isEmpty();
    }

    /**
     * Adds {@code item} of {@code caller} in priority class {@code priority}, arriving at
     * {@code nowNanos}; returns its ticket, or {@code null} when the queue is full.
     */
    public Ticket<T> offer(T item, String caller, int priority, long nowNanos) {
        if (arrival.size() >= capacity) {
            return null;
        }
        Ticket<T> t = new Ticket<>(this, item, caller, priority, nowNanos);
        Level<T> level = levels.computeIfAbsent(priority, p -> new Level<>());
        ArrayDeque<Ticket<T>> mine = level.byCaller.get(caller);
        if (mine == null) {
            mine = new ArrayDeque<>();
            level.byCaller.put(caller, mine);
            level.turns.addLast(caller); // a caller new to the class takes the last turn
        }
        mine.addLast(t);
        arrival.add(t);
        return t;
    }

    /** Returns the ticket to be served next without taking it, or {@code null} when empty. */
    public Ticket<T> peek() {
        if (levels.isEmpty()) {
            return null;
        }
        Level<T> level = levels.firstEntry().getValue();
        return level.byCaller.get(level.turns.peekFirst()).peekFirst();
    }

    /**
     * Takes the ticket {@link #peek()} returns; the caller's turn passes to the next caller of its
     * class. Returns {@code null} when empty.
     */
    public Ticket<T> poll() {
        if (levels.isEmpty()) {
            return null;
        }
        Map.Entry<Integer, Level<T>> top = levels.firstEntry();
        Level<T> level = top.getValue();
        String caller = level.turns.pollFirst();
        ArrayDeque<Ticket<T>> mine = level.byCaller.get(caller);
        Ticket<T> t = mine.pollFirst();
        if (mine.isEmpty()) {
            level.byCaller.remove(caller);
            if (level.turns.isEmpty()) {
                levels.remove(top.getKey());
            }
        } else {
            level.turns.addLast(caller);
        }
        left(t);
        return t;
    }

    /** Takes {@code t} out wherever it stands (its client hung up); returns whether it was queued here. */
    public boolean remove(Ticket<T> t) {
        if (!t.queued || t.owner != this) {
            return false;
        }
        removeFromLevels(t);
        left(t);
        return true;
    }

    /**
     * Takes out every ticket that has waited {@code limitNanos} or longer at {@code nowNanos}, oldest
     * first, and hands each to {@code expired}.
     */
    public void expire(long nowNanos, long limitNanos, Consumer<Ticket<T>> expired) {
        while (!arrival.isEmpty()) {
            Ticket<T> t = arrival.iterator().next();
            if (nowNanos - t.enqueuedNanos < limitNanos) {
                return;
            }
            remove(t);
            expired.accept(t);
        }
    }

    /** Returns when the oldest ticket joined, or {@link Long#MAX_VALUE} when empty. */
    public long oldestNanos() {
        Iterator<Ticket<T>> it = arrival.iterator();
        return it.hasNext() ? it.next().enqueuedNanos : Long.MAX_VALUE;
    }

    private void removeFromLevels(Ticket<T> t) {
        Level<T> level = levels.get(t.priority);
        ArrayDeque<Ticket<T>> mine = level.byCaller.get(t.caller);
        mine.remove(t);
        if (mine.isEmpty()) {
            level.byCaller.remove(t.caller);
            level.turns.remove(t.caller);
            if (level.turns.isEmpty()) {
                levels.remove(t.priority);
            }
        }
    }

    private void left(Ticket<T> t) {
        t.queued = false;
        arrival.remove(t);
    }
}
