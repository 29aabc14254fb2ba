package io.heartgate.scheduler.proxy;

import java.util.ArrayDeque;

/**
 * One event loop's spare {@link Transcript} buffers. A stream that could move takes one when its
 * answer begins and gives it back when it ends, so the copies are held by the streams in flight,
 * not by every idle keep-alive connection, and a long stream's grown buffer serves the next one
 * instead of being grown again from nothing. Bounded: at most {@link #SPARE} buffers of at most
 * {@link #LARGEST} bytes are kept. Event-loop confined.
 */
final class TranscriptBuffers {

    /** Buffers kept spare. */
    static final int SPARE = 32;
    /** The largest buffer kept spare; a larger one is left to the garbage collector. */
    static final int LARGEST = 1024 * 1024;
    private static final int FIRST = 16 * 1024;

    private final ArrayDeque<byte[]> spare = new ArrayDeque<>();

    /** Returns a buffer for an answer that begins: a spare one (the largest given back last), or a new one. */
    byte[] take() {
        byte[] b = spare.pollLast();
        return b != null ? b : new byte[FIRST];
    }

    /** Takes back the buffer of an answer that ended. */
    void give(byte[] b) {
        if (b.length <= LARGEST && spare.size() < SPARE) {
            spare.addLast(b);
        }
    }

    /** Returns how many buffers are spare (for tests). */
    int spare() {
        return spare.size();
    }
}
