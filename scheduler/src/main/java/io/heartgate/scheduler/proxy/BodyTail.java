package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.usage.UsageReader;
import io.netty.buffer.ByteBuf;
import java.util.Arrays;

/**
 * Keeps the last {@value #SIZE} bytes of a response body as it is relayed, for usage accounting:
 * the counts a node reports are in the body's last object. Copies at most that much of each chunk,
 * into one buffer made on the connection's first counted chunk and reused by its later responses
 * (a connection relays one at a time). The buffer starts at {@value #INITIAL} bytes and doubles
 * only as far as the answers need, so a connection that relays small answers (or one answer and
 * then idles) holds a fraction of the window. Event-loop confined.
 *
 * <p>A whole JSON answer may carry fields after its {@code usage} (vLLM's {@code prompt_logprobs} or
 * {@code prompt_token_ids}, asked for by the client) that push it out of those bytes. For such an
 * answer ({@link #start(boolean, boolean)} with {@code watch}), the bytes leaving the window are
 * looked through for {@code "usage"}, and up to {@value #HELD} bytes from the last one are held:
 * only a body longer than the window pays, and a stream, whose usage is its last event, never does.
 */
final class BodyTail {

    static final int SIZE = 4096;
    /** The buffer's first size: a small chat completion fits. */
    static final int INITIAL = 1024;
    /** Bytes held from a {@code "usage": {...}} that left the window: more than any usage object. */
    static final int HELD = 1024;
    private static final byte[] USAGE = {'"', 'u', 's', 'a', 'g', 'e', '"'};
    /** The most bytes a usage key with its blanks, colon and brace may take: more are not the servers'. */
    private static final int CANDIDATE = 32;

    private boolean counting;
    private boolean watching;
    /** Every byte of the counted response so far, for an estimate of a cut answer's tokens. */
    private long total;
    /** The kept bytes; smaller than {@link #SIZE} only while nothing has wrapped ({@code written} fits). */
    private byte[] ring;
    /** The kept bytes in order once the ring has wrapped, for reading: made once, like the ring. */
    private byte[] linear;
    private long written;
    /** Of the bytes that left the window: the last {@code "usage": {...}} and what followed it, up to {@link #HELD}. */
    private byte[] held;
    private int heldLength;
    /** Whether the bytes leaving go on into {@link #held}: they follow a usage key. */
    private boolean holding;
    /** What may be a usage key, being read: {@code "usage"} so far, then its blanks and colon. */
    private final byte[] candidate = new byte[CANDIDATE];
    private int candidateLength;
    private boolean colon;
    private byte before;

    /** Starts a response: its body is kept when {@code count} (usage is read from it), else ignored. */
    void start(boolean count) {
        start(count, false);
    }

    /**
     * Starts a response, kept when {@code count}; with {@code watch} too (a whole JSON answer), a
     * usage object that more bytes follow than the window holds is kept apart.
     */
    void start(boolean count, boolean watch) {
        counting = count;
        watching = count && watch;
        written = 0;
        total = 0;
        heldLength = 0;
        holding = false;
        candidateLength = 0;
        before = 0;
    }

    /** Notes the readable bytes of {@code chunk} of a counted response, without moving its indexes. */
    void add(ByteBuf chunk) {
        int n = chunk.readableBytes();
        if (!counting || n == 0) {
            return;
        }
        total += n;
        int kept = length();
        if (watching && kept + n > SIZE) {
            leaving(kept, n, chunk);
        }
        int take = Math.min(n, SIZE);
        fit(take);
        int from = chunk.readerIndex() + n - take;
        int pos = (int) (written % SIZE);
        int first = Math.min(take, SIZE - pos);
        chunk.getBytes(from, ring, pos, first);
        if (first < take) {
            chunk.getBytes(from + first, ring, 0, take - first);
        }
        written += take;
    }

    /** Makes room for {@code take} more bytes: a first buffer, or a larger one while it has not wrapped. */
    private void fit(int take) {
        if (ring != null && ring.length == SIZE) {
            return;
        }
        long needed = written + take; // below SIZE nothing has wrapped: the bytes are [0, written)
        if (ring != null && needed <= ring.length) {
            return;
        }
        int size = ring == null ? INITIAL : ring.length;
        while (size < needed && size < SIZE) {
            size *= 2;
        }
        size = Math.min(size, SIZE);
        ring = ring == null ? new byte[size] : Arrays.copyOf(ring, size);
    }

    /** Looks through the bytes about to leave the window: the oldest kept ones, then the chunk's head beyond {@link #SIZE}. */
    private void leaving(int kept, int n, ByteBuf chunk) {
        int out = Math.min(kept, kept + n - SIZE);
        int start = (int) ((written - kept) % SIZE);
        for (int i = 0; i < out; i++) {
            see(ring[(start + i) % SIZE]);
        }
        for (int i = 0; i < n - SIZE; i++) {
            see(chunk.getByte(chunk.readerIndex() + i));
        }
    }

    /**
     * Looks at one byte leaving the window: it goes on into a usage object being held, or on reading
     * what may be a usage key. A key counts only when a colon and an opening brace follow it, so that
     * a string {@code "usage"} (a token of {@code prompt_logprobs}, say) never takes the place of the
     * object.
     */
    private void see(byte b) {
        if (holding) {
            held[heldLength++] = b;
            holding = heldLength < HELD; // within a held object, a nested "usage" is not a new one
            before = b;
            return;
        }
        if (candidateLength > 0 && candidateLength < USAGE.length) {
            if (b == USAGE[candidateLength]) {
                candidate[candidateLength++] = b;
                before = b;
                return;
            }
            candidateLength = 0;
        } else if (candidateLength > 0) {
            boolean blank = b == ' ' || b == '\t' || b == '\n' || b == '\r';
            if (candidateLength < CANDIDATE && (blank || b == ':' && !colon || b == '{' && colon)) {
                candidate[candidateLength++] = b;
                colon |= b == ':';
                if (b == '{') {
                    hold();
                }
                before = b;
                return;
            }
            candidateLength = 0; // a value "usage", or anything else: no usage object
        }
        if (b == '"' && before != '\\') {
            candidate[0] = b;
            candidateLength = 1;
            colon = false;
        }
        before = b;
    }

    /** A usage key and its brace left the window: the bytes leaving from now on are held after them. */
    private void hold() {
        if (held == null) {
            held = new byte[HELD];
        }
        System.arraycopy(candidate, 0, held, 0, candidateLength);
        heldLength = candidateLength;
        holding = true;
        candidateLength = 0;
    }

    /** Returns the token counts the counted response's end reports, or {@code null} (not counted, none found). */
    UsageReader.Usage usage() {
        if (!counting) {
            return null;
        }
        UsageReader.Usage found = UsageReader.read(bytes(), length());
        if (found != null || !watching) {
            return found;
        }
        // A usage key cut where the window begins (or only a quote that left last), then a usage
        // object that left it: each read joined to the window.
        if (candidateLength > 0) {
            found = UsageReader.read(joined(candidate, candidateLength), candidateLength + length());
            if (found != null) {
                return found;
            }
        }
        if (heldLength == 0) {
            return null;
        }
        // Held all it may: the window does not follow on from it.
        return UsageReader.read(joined(held, heldLength), holding ? heldLength + length() : heldLength);
    }

    /** Returns the first {@code head} bytes of {@code from}, then the window's. */
    private byte[] joined(byte[] from, int head) {
        byte[] joined = Arrays.copyOf(from, head + length());
        System.arraycopy(bytes(), 0, joined, head, length());
        return joined;
    }

    /** Says whether the current response is counted. */
    boolean counting() {
        return counting;
    }

    /**
     * Returns about how many events (SSE {@code data: {...}} or NDJSON lines) the counted response has
     * had so far: those the window holds, scaled to every byte relayed. A streaming node sends about
     * one token an event, so this stands in for the completion tokens of an answer cut before the node
     * reported them.
     */
    long eventsEstimate() {
        int len = length();
        if (len == 0) {
            return 0;
        }
        byte[] b = bytes();
        int events = 0;
        int first = -1; // where the window's first whole event starts: what comes before is a cut one
        for (int i = 0; i < len; i++) {
            if ((i == 0 || b[i - 1] == '\n') && (b[i] == '{' || startsData(b, i, len))) {
                events++;
                first = first < 0 ? i : first;
            }
        }
        return events == 0 ? 0 : Math.round((double) (total - first) * events / (len - first));
    }

    private static boolean startsData(byte[] b, int i, int len) {
        return i + 6 < len && b[i] == 'd' && b[i + 1] == 'a' && b[i + 2] == 't' && b[i + 3] == 'a' && b[i + 4] == ':'
                && (b[i + 5] == '{' || b[i + 5] == ' ' && b[i + 6] == '{');
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
        if (ring.length < SIZE) {
            return ring; // nothing has wrapped: the kept bytes are its first length()
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
