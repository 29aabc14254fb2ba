package io.heartgate.scheduler.admission;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * Holds the requests waiting for one model in the order they are to be served: a higher priority
 * class always first; within a class, callers in rounds, one request each per round (a caller that
 * floods waits behind itself, not in front of the others); within a caller, oldest first. Bounded.
 * Plain values and the caller's clock: no thread, no timer, not thread-safe (the {@link
 * GatewayQueue} guards it).
 *
 * <p>The rounds are start-time fair queuing (Goyal, Vin and Cheng, 1996) with every request
 * costing one: a request is tagged with the round it is to be served in, and the lowest tag goes
 * first. A caller that had nothing waiting joins the round in progress unless it has already been
 * served in it, so a caller sending below its share is served at the next free slot instead of
 * after one more turn of every flooding caller; a caller that comes back after each answer (a
 * closed loop) still gets one turn a round. Such a caller may have up to a burst of requests served
 * in the round it joins (in turn with the others in that round; the gateway's is {@link #BURST}), so
 * a client's parallel calls (an agent's tool calls, a page of prompts) go together instead of one
 * per turn of every flooding caller; a caller that keeps requests waiting gets no burst again until
 * it has none.
 *
 * <p>A full queue gives way to a newcomer as {@link LongestQueueDrop} decides, so a caller that
 * floods fills the queue with its own backlog without locking the others out of it.
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

        /** A ticket for a request that found room as it came and never queued: nothing to take out. */
        static <T> Ticket<T> passing(T item, String caller, int priority, long nowNanos) {
            Ticket<T> t = new Ticket<>(null, item, caller, priority, nowNanos);
            t.queued = false;
            return t;
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

    /**
     * One caller's waiting requests, oldest first. The oldest {@code 1 + extra} are served in
     * {@link #round}, the others one a round after it, so taking one out anywhere moves those behind
     * it up: it loses no turn.
     */
    private static final class Waiting<T> {
        final ArrayDeque<Ticket<T>> tickets = new ArrayDeque<>();
        /** The round the oldest is to be served in. */
        long round;
        /** How many more than one may still be served in {@link #round}: what is left of its burst. */
        int extra;

        Waiting(long round, int burst) {
            this.round = round;
            this.extra = burst - 1;
        }

        /** Its turn is taken: the next waits for the next round, or, while its burst lasts, this one's end. */
        void turnTaken() {
            if (extra > 0) {
                extra--;
            } else {
                round++;
            }
        }
    }

    /**
     * The gateway queue's burst: the most requests a caller that had none waiting may have served in
     * the round it joins. Four covers the parallel calls of a small agent or a page of prompts;
     * beyond it, a burst takes one turn a round like a flood. A burst only moves a caller's requests
     * ahead of others' within one round: each puts at most three more ahead of every other caller's
     * next. A caller earns it again each time it has nothing waiting, so a client that keeps no more
     * than four waiting gets up to four turns a round against a flood's one: bounded concurrency is
     * favoured over a backlog, as FQ-CoDel favours sparse flows.
     */
    public static final int BURST = 4;

    /** The callers of one priority class with requests waiting, and the round being served. */
    private static final class Level<T> {
        final Map<String, Waiting<T>> byCaller = new HashMap<>();
        /** Callers by the round of their oldest waiting request; within a round, in the order they joined it. */
        final TreeMap<Long, ArrayDeque<String>> byRound = new TreeMap<>();
        /** The round of the request served last. */
        long round;
        /**
         * The earliest round a caller's next request may join, for callers that have had a turn since
         * {@link #round} began: the next round for one served in it, a later one for one whose turn
         * of a round still to come was served ahead ({@link #take}). What the round has passed is
         * dropped: any other caller joins the round in progress.
         */
        final Map<String, Long> earliest = new HashMap<>();

        /** Notes that {@code caller}'s next request may not join before round {@code r}. */
        void notBefore(String caller, long r) {
            earliest.merge(caller, r, Math::max);
        }

        void join(String caller, long r) {
            byRound.computeIfAbsent(r, k -> new ArrayDeque<>()).addLast(caller);
        }

        void leave(String caller, long r) {
            ArrayDeque<String> callers = byRound.get(r);
            callers.remove(caller);
            if (callers.isEmpty()) {
                byRound.remove(r);
            }
        }
    }

    private final int capacity;
    private final int burst;
    /** Priority class (highest first) to its callers. */
    private final TreeMap<Integer, Level<T>> levels = new TreeMap<>((a, b) -> Integer.compare(b, a));
    /** Every ticket in the order it came, for the wait limit: all share one, so the oldest expire first. */
    private final LinkedHashSet<Ticket<T>> arrival = new LinkedHashSet<>();

    /** Creates an empty queue holding at most {@code capacity} requests, one of each caller a round. */
    public FairQueue(int capacity) {
        this(capacity, 1);
    }

    /**
     * Creates an empty queue holding at most {@code capacity} requests, in which a caller that had
     * none waiting may have up to {@code burst} served in the round it joins.
     */
    public FairQueue(int capacity, int burst) {
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity must not be negative, was " + capacity);
        }
        if (burst < 1) {
            throw new IllegalArgumentException("burst must be at least 1, was " + burst);
        }
        this.capacity = capacity;
        this.burst = burst;
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
        Waiting<T> mine = level.byCaller.get(caller);
        if (mine == null) {
            Long notBefore = level.earliest.get(caller);
            mine = new Waiting<>(notBefore == null ? level.round : Math.max(level.round, notBefore), burst);
            level.byCaller.put(caller, mine);
            level.join(caller, mine.round);
        }
        mine.tickets.addLast(t);
        arrival.add(t);
        return t;
    }

    /** Says whether the queue holds as many requests as it may. */
    public boolean full() {
        return arrival.size() >= capacity;
    }

    /**
     * Returns the request a full queue should drop to make room for a new one of {@code caller} in
     * class {@code priority} ({@link LongestQueueDrop}), or {@code null} when the newcomer is to be
     * refused instead. Takes nothing out: the caller {@link #remove}s what it answers.
     */
    public Ticket<T> giveWayTo(String caller, int priority) {
        return LongestQueueDrop.choose(List.of(this), caller, priority);
    }

    /** Returns how many requests {@code caller} has waiting in class {@code priority}. */
    public int waitingOf(String caller, int priority) {
        Level<T> level = levels.get(priority);
        Waiting<T> mine = level == null ? null : level.byCaller.get(caller);
        return mine == null ? 0 : mine.tickets.size();
    }

    /** Returns the lowest priority class with requests waiting, or {@code null} when empty. */
    Integer lowestClass() {
        return levels.isEmpty() ? null : levels.lastKey();
    }

    /** Hands each caller waiting in class {@code priority} and its requests, oldest first, to {@code each}. */
    void eachCaller(int priority, BiConsumer<String, ArrayDeque<Ticket<T>>> each) {
        Level<T> level = levels.get(priority);
        if (level != null) {
            level.byCaller.forEach((caller, waiting) -> each.accept(caller, waiting.tickets));
        }
    }

    /** Returns the ticket to be served next without taking it, or {@code null} when empty. */
    public Ticket<T> peek() {
        if (levels.isEmpty()) {
            return null;
        }
        Level<T> level = levels.firstEntry().getValue();
        return level.byCaller.get(level.byRound.firstEntry().getValue().peekFirst()).tickets.peekFirst();
    }

    /**
     * Takes the ticket {@link #peek()} returns; its caller's next request waits for the next round.
     * Returns {@code null} when empty.
     */
    public Ticket<T> poll() {
        if (levels.isEmpty()) {
            return null;
        }
        Map.Entry<Integer, Level<T>> top = levels.firstEntry();
        Level<T> level = top.getValue();
        Map.Entry<Long, ArrayDeque<String>> first = level.byRound.firstEntry();
        String caller = first.getValue().pollFirst();
        if (first.getValue().isEmpty()) {
            level.byRound.remove(first.getKey());
        }
        Waiting<T> mine = level.byCaller.get(caller);
        Ticket<T> t = mine.tickets.pollFirst();
        if (mine.round > level.round) {
            level.round = mine.round;
            level.earliest.values().removeIf(r -> r <= level.round);
        }
        level.notBefore(caller, level.round + 1);
        if (mine.tickets.isEmpty()) {
            level.byCaller.remove(caller);
            if (level.byCaller.isEmpty()) {
                levels.remove(top.getKey()); // nobody else waits: no round to keep
            }
        } else {
            mine.turnTaken();
            level.join(caller, mine.round);
        }
        left(t);
        return t;
    }

    /**
     * Takes {@code t} to be served: as {@link #poll()} when it is the one to be served next, else out of
     * its place (a request the next could not use went ahead of it). Either way it is its caller's
     * turn: the caller's requests still waiting move back a round, or, with none left, one it sends
     * next waits for the next round.
     */
    public void take(Ticket<T> t) {
        if (t == peek()) {
            poll();
            return;
        }
        if (!t.queued || t.owner != this) {
            return;
        }
        Level<T> level = levels.get(t.priority);
        Waiting<T> mine = level.byCaller.get(t.caller);
        removeFromLevels(t);
        left(t);
        if (mine.tickets.isEmpty()) {
            if (levels.get(t.priority) != level) {
                return; // nobody else waits: no round to keep
            }
            level.notBefore(t.caller, mine.round + 1); // its turn was that of mine.round
        } else {
            level.leave(t.caller, mine.round);
            mine.turnTaken();
            level.join(t.caller, mine.round);
        }
    }

    /** Returns every ticket waiting, the highest class first and, within a class, the oldest first. */
    public List<Ticket<T>> byClassThenAge() {
        List<Ticket<T>> all = new ArrayList<>(arrival);
        all.sort(Comparator.comparingInt((Ticket<T> t) -> -t.priority)); // stable: arrival order within a class
        return all;
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

    /** Takes {@code t} out of its class; the caller's requests behind it move up a round each, so it loses no turn. */
    private void removeFromLevels(Ticket<T> t) {
        Level<T> level = levels.get(t.priority);
        Waiting<T> mine = level.byCaller.get(t.caller);
        mine.tickets.remove(t);
        if (mine.tickets.isEmpty()) {
            level.byCaller.remove(t.caller);
            level.leave(t.caller, mine.round);
            if (level.byCaller.isEmpty()) {
                levels.remove(t.priority);
            } else {
                level.notBefore(t.caller, mine.round); // turns taken ahead (take) stay taken
            }
        }
    }

    private void left(Ticket<T> t) {
        t.queued = false;
        arrival.remove(t);
    }
}
