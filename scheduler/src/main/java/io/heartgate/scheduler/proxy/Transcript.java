package io.heartgate.scheduler.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.Arrays;

/**
 * The bytes of the stream a connection relays now, as its client got them, kept so that a stream
 * cut by its node can be continued on another ({@link Migration}). Only streamed generations that
 * could be continued are kept. One per connection; its buffer is taken from the loop's
 * {@link TranscriptBuffers} when a kept answer begins and given back when it ends, so a stream that
 * never fails costs a copy of its bytes and, once the loop's buffers have grown, no allocation. An
 * answer longer than {@link #MAX} is no longer kept, and is cut if its node fails.
 *
 * <p>While a stream is kept, its client gets whole events only (SSE events, NDJSON lines): a chunk
 * that ends inside one is split and its end held until the rest comes, so that a stream cut inside
 * an event leaves the client no broken line and the next node's text follows a whole one. Servers
 * flush whole events, so this costs nothing unless a chunk really ends inside one; no more than
 * {@link #HOLD_MAX} is ever held back. Event-loop confined.
 */
final class Transcript {

    /** The longest answer kept, in bytes. */
    static final int MAX = 4 * 1024 * 1024;
    /** The most of one event held back: a longer one (or a stream that is not events) is relayed as it comes. */
    static final int HOLD_MAX = 16 * 1024;

    private static final byte[] NONE = new byte[0];

    private byte[] bytes = NONE;
    private TranscriptBuffers buffers;
    private int length;
    /** How many of the kept bytes the client got: the rest is part of an event still to be completed. */
    private int relayed;
    private boolean lines;
    private boolean on;
    private boolean overflowed;

    /** Names the loop's buffers this connection's answers take theirs from; once, before its first answer. */
    void from(TranscriptBuffers loopBuffers) {
        if (buffers == null) {
            buffers = loopBuffers;
        }
    }

    /** An answer begins: keep its bytes when {@code keep}; {@code lines}: its events are NDJSON lines, else SSE events. */
    void begin(boolean keep, boolean lines) {
        giveBack();
        if (keep && buffers != null) {
            bytes = buffers.take();
        }
        length = 0;
        relayed = 0;
        overflowed = false;
        this.lines = lines;
        on = keep;
    }

    /** The node that sent the answer so far failed: the part of an event it held back is dropped, never sent. */
    void cut() {
        length = relayed;
    }

    /** The answer ended or is not kept: nothing more is, and the buffer goes back to the loop. */
    void end() {
        on = false;
        giveBack();
    }

    private void giveBack() {
        if (bytes != NONE && buffers != null) {
            buffers.give(bytes);
        }
        bytes = NONE;
    }

    /**
     * Keeps a chunk that is not the last and returns what its client gets now: the chunk itself when
     * it ends on an event's end and nothing was held, else the held bytes and the chunk's whole
     * events, or {@code null} when it completes none. Takes ownership of {@code content}.
     */
    HttpContent whole(HttpContent content) {
        if (!on) {
            return content;
        }
        boolean held = relayed < length;
        add(content.content());
        if (!on) { // grown past MAX: no longer kept, so whatever was held goes now
            return held ? content.replace(Unpooled.wrappedBuffer(Unpooled.copiedBuffer(bytes, relayed, length - relayed),
                    content.content())) : content;
        }
        int end = length - lastEnd() > HOLD_MAX ? length : lastEnd();
        if (end == length && !held) {
            relayed = length;
            return content;
        }
        content.release();
        if (end <= relayed) {
            return null;
        }
        HttpContent out = new DefaultHttpContent(Unpooled.copiedBuffer(bytes, relayed, end - relayed));
        relayed = end;
        return out;
    }

    /** Returns the last chunk as its client gets it, after whatever was held; takes ownership of {@code content}. */
    LastHttpContent last(LastHttpContent content) {
        boolean held = on && relayed < length;
        on = false;
        if (!held) {
            return content;
        }
        DefaultLastHttpContent out = new DefaultLastHttpContent(Unpooled.wrappedBuffer(
                Unpooled.copiedBuffer(bytes, relayed, length - relayed), content.content()));
        out.trailingHeaders().set(content.trailingHeaders());
        return out;
    }

    /** Returns the end of the last whole event kept (just past its blank line, or its line). */
    private int lastEnd() {
        for (int i = length - 1; i >= relayed; i--) {
            if (bytes[i] == '\n' && (lines || i > 0 && (bytes[i - 1] == '\n'
                    || bytes[i - 1] == '\r' && i > 1 && bytes[i - 2] == '\n'))) {
                return i + 1;
            }
        }
        return relayed;
    }

    /** Says whether the answer relayed now is kept. */
    boolean on() {
        return on;
    }

    /** Keeps the readable bytes of {@code chunk} (indexes untouched). */
    private void add(ByteBuf chunk) {
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

    /** Returns how many bytes of the answer its client got, all whole events. */
    int relayed() {
        return relayed;
    }
}
