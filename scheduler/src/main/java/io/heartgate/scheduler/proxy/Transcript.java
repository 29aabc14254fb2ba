package io.heartgate.scheduler.proxy;

import io.netty.buffer.ByteBuf;
import java.util.Arrays;

/**
 * The bytes of the stream a connection relays now, as its client got them, kept so that a stream
 * cut by its node can be continued on another ({@link Migration}). Only streamed generations that
 * could be continued are kept. One per connection, reused by its answers, so a stream that never
 * fails costs a copy of its bytes and no allocation once the buffer has grown; a buffer grown past
 * {@link #KEEP} by one long answer is let go when the next begins. An answer longer than
 * {@link #MAX} is no longer kept, and is cut as before if its node fails. Event-loop confined.
 */
final class Transcript {

    /** The longest answer kept, in bytes. */
    static final int MAX = 4 * 1024 * 1024;
    /** The buffer kept between answers. */
    private static final int KEEP = 64 * 1024;

    private static final byte[] NONE = new byte[0];

    private byte[] bytes = NONE;
    private int length;
    private boolean on;
    private boolean overflowed;

    /** An answer begins: keep its bytes when {@code keep}. */
    void begin(boolean keep) {
        if (bytes.length > KEEP) {
            bytes = NONE;
        }
        length = 0;
        overflowed = false;
        on = keep;
    }

    /** Says whether the answer relayed now is kept. */
    boolean on() {
        return on;
    }

    /** Keeps the readable bytes of {@code chunk} (indexes untouched). */
    void add(ByteBuf chunk) {
        if (!on) {
            return;
        }
        int n = chunk.readableBytes();
        if (length + n > MAX) {
            on = false;
            overflowed = true;
            return;
        }
        if (length + n > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.min(MAX, Math.max(Math.max(length + n, 4096), bytes.length * 2)));
        }
        chunk.getBytes(chunk.readerIndex(), bytes, length, n);
        length += n;
    }

    /** Says whether the answer grew past {@link #MAX} and was no longer kept. */
    boolean overflowed() {
        return overflowed;
    }

    /** Returns the buffer; its first {@link #length()} bytes are the answer's. */
    byte[] bytes() {
        return bytes;
    }

    /** Returns how many bytes of the answer are kept. */
    int length() {
        return length;
    }
}
