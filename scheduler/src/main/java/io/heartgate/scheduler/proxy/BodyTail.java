package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.usage.UsageReader;
import io.netty.buffer.ByteBuf;

/**
 * Keeps the last {@value #SIZE} bytes of a response body as it is relayed, for usage accounting:
 * the counts a node reports are in the body's last object. Copies at most that much of each chunk,
 * into one buffer made on the connection's first counted chunk and reused by its later responses
 * (a connection relays one at a time). Event-loop confined.
 */
final class BodyTail {

    static final int SIZE = 4096;

    private boolean counting;
    private byte[] ring;
    /** The kept bytes in order, for reading: made once, like the ring. */
    private byte[] linear;
    private long written;

    /** Starts a response: its body is kept when {@code count} (usage is read from it), else ignored. */
    void start(boolean count) {
        counting = count;
        written = 0;
    }

    /** Notes the readable bytes of {@code chunk} of a counted response, without moving its indexes. */
    void add(ByteBuf chunk) {
        int n = chunk.readableBytes();
        if (!counting || n == 0) {
            return;
        }
        if (ring == null) {
            ring = new byte[SIZE];
        }
        int take = Math.min(n, SIZE);
        int from = chunk.readerIndex() + n - take;
        int pos = (int) (written % SIZE);
        int first = Math.min(take, SIZE - pos);
        chunk.getBytes(from, ring, pos, first);
        if (first < take) {
            chunk.getBytes(from + first, ring, 0, take - first);
        }
        written += take;
    }

    /** Returns the token counts the counted response's end reports, or {@code null} (not counted, none found). */
    UsageReader.Usage usage() {
        return counting ? UsageReader.read(bytes(), length()) : null;
    }

    /** Returns how many bytes are kept: the body's length, at most {@value #SIZE}. */
    int length() {
        return (int) Math.min(written, SIZE);
    }

    /**
     * Returns a buffer whose first {@link #length()} bytes are the kept ones, oldest first; the same
     * buffer each time, valid until the next {@link #add}.
     */
    byte[] bytes() {
        if (ring == null) {
            return new byte[0];
        }
        if (linear == null) {
            linear = new byte[SIZE];
        }
        int len = length();
        int start = (int) ((written - len) % SIZE);
        int first = Math.min(len, SIZE - start);
        System.arraycopy(ring, start, linear, 0, first);
        System.arraycopy(ring, 0, linear, first, len - first);
        return linear;
    }
}
