package io.heartgate.scheduler.table;

import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * Counts this scheduler's requests in flight to one node, and notes when the node last sent this
 * scheduler a byte of a response (the stall rule's evidence that a node is busy, not hung). The count lives in a slot of a shared
 * {@link AtomicIntegerArray} chunk that the table assigns per node id and never reuses, so every
 * snapshot of a node shares one count, a request released after its node left cannot disturb
 * another node, and balancers can scan thousands of counts in contiguous memory. Thread-safe.
 */
public final class InFlight {

    private final AtomicIntegerArray chunk;
    private final int index;
    /** Coarse (sweep-period) ms of the proxy's nanosecond ticker; written only when it changes. */
    private volatile long lastAnswerMs = Long.MIN_VALUE;

    /** Creates a counter over {@code chunk[index]}. */
    public InFlight(AtomicIntegerArray chunk, int index) {
        this.chunk = chunk;
        this.index = index;
    }

    /** Creates a stand-alone counter (tests, tools). */
    public InFlight() {
        this(new AtomicIntegerArray(1), 0);
    }

    /** Returns the requests in flight now. */
    public int get() {
        return chunk.get(index);
    }

    /** Counts one more request. */
    public void increment() {
        chunk.incrementAndGet(index);
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
}
