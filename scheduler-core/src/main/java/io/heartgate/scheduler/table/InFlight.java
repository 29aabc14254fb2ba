package io.heartgate.scheduler.table;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * Counts this scheduler's requests in flight to one node, and notes when the node last sent this
 * scheduler a byte of a response (the stall rule's evidence that a node is busy, not hung) and which
 * models it answered for lately (warm-first's evidence that a model is in memory before a heartbeat
 * says so). The count lives in a slot of a shared
 * {@link AtomicIntegerArray} chunk that the table assigns per node id and never reuses, so every
 * snapshot of a node shares one count, a request released after its node left cannot disturb
 * another node, and balancers can scan thousands of counts in contiguous memory. Its
 * {@link TokenLoad} says how many prompt tokens those requests bring. Thread-safe.
 */
public final class InFlight {

    private final AtomicIntegerArray chunk;
    private final int index;
    /** Coarse (sweep-period) ms of the proxy's nanosecond ticker; written only when it changes. */
    private volatile long lastAnswerMs = Long.MIN_VALUE;
    /** Model to the wall-clock ms it was last answered for; copied on write, which is rare. */
    private volatile Map<String, Long> servedAtMs = Map.of();
    /** The most requests in flight since {@link #takePeak()} last ran; written only when exceeded. */
    private volatile int peak;
    /** The peak of the period before that one. */
    private int previousPeak;
    /** Model to this scheduler's requests in flight that the node must load it for; created on first use. */
    private volatile ConcurrentHashMap<String, Integer> loading;
    /** The prefill backlog and learned speeds of this scheduler's requests on the node. */
    private final TokenLoad tokens = new TokenLoad();

    private static final VarHandle PEAK;

    static {
        try {
            PEAK = MethodHandles.lookup().findVarHandle(InFlight.class, "peak", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The most models remembered as answered; a heartbeat lists at most 64 loaded. */
    static final int MAX_SERVED = 64;
    /** How often, at most, the time a model was answered for is written again. */
    private static final long SERVED_GRANULARITY_MS = 250;

    /** Creates a counter over {@code chunk[index]}. */
    public InFlight(AtomicIntegerArray chunk, int index) {
        this.chunk = chunk;
        this.index = index;
    }

    /** Creates a stand-alone counter (tests, tools). */
    public InFlight() {
        this(new AtomicIntegerArray(1), 0);
    }

    /** Returns the node's token load: its prefill backlog and what was learned of its speed. */
    public TokenLoad tokens() {
        return tokens;
    }

    /** Returns the requests in flight now. */
    public int get() {
        return chunk.get(index);
    }

    /** Counts one more request. */
    public void increment() {
        notePeak(chunk.incrementAndGet(index));
    }

    /**
     * Counts one more request if fewer than {@code limit} are in flight, atomically: a node's slots are
     * never overbooked by two event loops taking the last one at once. Returns whether it counted.
     */
    public boolean tryIncrement(int limit) {
        while (true) {
            int c = chunk.get(index);
            if (c >= limit) {
                return false;
            }
            if (chunk.compareAndSet(index, c, c + 1)) {
                notePeak(c + 1);
                return true;
            }
        }
    }

    private void notePeak(int count) {
        int p = peak;
        // Written only when exceeded (a plain read on the common path); a compare-and-set so that two
        // loops raising it at once cannot leave the lower count, nor a period's reset be overwritten by a stale peak.
        while (count > p && !PEAK.compareAndSet(this, p, count)) {
            p = peak;
        }
    }

    /**
     * Returns the most requests in flight over the last two periods (a period runs from one call to
     * the next), and starts the next period from the count now: the table reads it per heartbeat, so
     * that what a node reports beyond this scheduler's own peak is known to come from elsewhere. Two
     * periods, because a heartbeat that arrives late may carry a sample taken before the last call.
     * Called by the table's single writer.
     */
    public int takePeak() {
        int now = get();
        int current = Math.max((int) PEAK.getAndSet(this, now), now);
        int p = Math.max(current, previousPeak);
        previousPeak = current;
        return p;
    }

    /** Counts one request less; never goes below zero. */
    public void decrement() {
        chunk.getAndUpdate(index, c -> c > 0 ? c - 1 : 0);
    }

    /** Returns the chunk holding this count, for balancers that scan many counts. */
    public AtomicIntegerArray chunk() {
        return chunk;
    }

    /** Returns this count's index in {@link #chunk()}. */
    public int index() {
        return index;
    }

    /**
     * Notes that the node sent a response head or chunk at {@code nowMs} (the proxy's coarse clock);
     * a plain read when the time is unchanged, so calling it per chunk costs next to nothing.
     */
    public void answered(long nowMs) {
        if (lastAnswerMs < nowMs) {
            lastAnswerMs = nowMs;
        }
    }

    /** Returns when the node last sent a byte of a response, or {@link Long#MIN_VALUE} if never. */
    public long lastAnswerMs() {
        return lastAnswerMs;
    }

    /**
     * Notes that the node answered a request for {@code normalizedModel} at {@code nowMs} (wall clock);
     * a plain read when it did so within the last 250 ms. Keeps the {@value #MAX_SERVED} most recent.
     */
    public void served(String normalizedModel, long nowMs) {
        Long last = servedAtMs.get(normalizedModel);
        if (last != null && last > nowMs - SERVED_GRANULARITY_MS) {
            return;
        }
        synchronized (this) {
            Map<String, Long> next = new HashMap<>(servedAtMs);
            next.put(normalizedModel, nowMs);
            while (next.size() > MAX_SERVED) {
                next.values().remove(next.values().stream().min(Long::compare).orElseThrow());
            }
            servedAtMs = Map.copyOf(next);
        }
    }

    /**
     * Counts {@code delta} (+1 or -1) requests in flight that were sent while the node did not hold
     * {@code normalizedModel} in memory: it is loading the model for them, so more requests for it
     * are better queued behind that load than starting another elsewhere.
     */
    public void loading(String normalizedModel, int delta) {
        ConcurrentHashMap<String, Integer> map = loading;
        if (map == null) {
            synchronized (this) {
                map = loading;
                if (map == null) {
                    map = new ConcurrentHashMap<>();
                    loading = map;
                }
            }
        }
        map.compute(normalizedModel, (m, n) -> {
            int next = (n == null ? 0 : n) + delta;
            return next > 0 ? next : null;
        });
    }

    /** Returns when the node last answered for any model (wall-clock ms), or {@link Long#MIN_VALUE}. */
    public long lastServedAtMs() {
        long last = Long.MIN_VALUE;
        for (long at : servedAtMs.values()) {
            last = Math.max(last, at);
        }
        return last;
    }

    /** Says whether any request in flight waits for the node to load a model. */
    public boolean loadingAny() {
        ConcurrentHashMap<String, Integer> map = loading;
        return map != null && !map.isEmpty();
    }

    /** Returns the requests in flight the node is loading {@code normalizedModel} for. */
    public int loading(String normalizedModel) {
        ConcurrentHashMap<String, Integer> map = loading;
        Integer n = map == null ? null : map.get(normalizedModel);
        return n == null ? 0 : n;
    }

    /** Returns when the node last answered for {@code normalizedModel} (wall-clock ms), or {@link Long#MIN_VALUE}. */
    public long servedAtMs(String normalizedModel) {
        Long at = servedAtMs.get(normalizedModel);
        return at == null ? Long.MIN_VALUE : at;
    }
}
