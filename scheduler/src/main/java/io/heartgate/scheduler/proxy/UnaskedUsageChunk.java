package io.heartgate.scheduler.proxy;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.heartgate.scheduler.request.BodyJson;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpContent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Keeps back from a client the event that ends an OpenAI stream with the tokens it used (a chunk
 * with {@code "choices":[]} and a {@code usage} object) when {@code --force-usage} asked the node
 * for it and the client did not. The proxy reads the usage before this, so it is counted all the
 * same; the client gets the stream it would have had from the node alone. Clients that read
 * {@code choices[0]} of every chunk, as most examples do, fail on that event.
 *
 * <p>Only an event of its own goes, with the blank line that ends it; every other byte passes
 * unchanged and in order. To judge a line whole, a line split across reads is held until its end
 * arrives, and only while it is short enough to be that event ({@value #MOST} bytes): a longer one
 * goes on as it comes. A client cannot act on part of an SSE line, so the hold costs it nothing.
 * The lines are judged by their line feeds, as every server here ends them; a stream seen to end
 * its lines with a bare CR (SSE allows it) goes on as it comes from there, so nothing of it is held.
 * Written by hand: no library filters SSE events of a relayed byte stream in place. One per
 * connection, reused by its answers (a connection relays one at a time); event-loop confined.
 */
final class UnaskedUsageChunk {

    /** More than a usage-only chunk takes (an id, a model name, a few counts): a longer line is never one. */
    static final int MOST = 4096;
    private static final byte[] DATA = "data:".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CHOICES = "\"choices\"".getBytes(StandardCharsets.US_ASCII);

    private boolean active;
    /** A line begun in an earlier chunk and not ended yet, held: at most {@link #MOST} bytes. */
    private byte[] held;
    private int heldLength;
    /** Whether the line under way outgrew {@link #MOST}, so goes on as it comes. */
    private boolean passing;
    /** Whether the next line starts an event: the stream's first, or one after a blank line. */
    private boolean eventStart;
    /** Whether a usage chunk was just kept back, so the blank line ending its event goes too. */
    private boolean keptBack;
    /** Scratch arrays above this size are let go when an answer ends, so a connection keeps none. */
    static final int KEPT = 2 * MOST;
    /** A chunk's bytes, and what of them goes on: made on the first active answer, grown as needed. */
    private byte[] in = new byte[0];
    private byte[] out = new byte[0];
    private int outLength;

    /** Starts an answer: with {@code active}, its usage-only event is kept back; otherwise it passes untouched. */
    void start(boolean active) {
        this.active = active;
        heldLength = 0;
        passing = false;
        eventStart = true;
        keptBack = false;
        letGoOfLargeArrays(); // an answer cut short gave no last chunk
        if (active && held == null) {
            held = new byte[MOST];
        }
    }

    /**
     * Returns {@code content} as its client is to get it, taking ownership of it: the same object
     * when nothing changes, a new one otherwise, or {@code null} when nothing is to be written now
     * (never for the {@code last} one, which also gives up a line still held).
     */
    HttpContent shown(HttpContent content, boolean last) {
        if (!active) {
            return content;
        }
        ByteBuf buf = content.content();
        int n = buf.readableBytes();
        if (in.length < n) {
            in = new byte[Math.max(n, 2 * in.length)];
        }
        buf.getBytes(buf.readerIndex(), in, 0, n);
        if (heldLength == 0 && !passing && !keptBack && n > 0 && in[n - 1] == '\n' && !choicesEmpty(in, 0, n)) {
            eventStart = lastLineBlank(in, n); // the common case: whole lines, none of them the one
            if (last) {
                letGoOfLargeArrays();
            }
            return content;
        }
        outLength = 0;
        boolean changed = split(n);
        if (last && heldLength > 0) {
            emit(held, 0, heldLength); // a last line with no end of line: as the node sent it
            heldLength = 0;
        }
        HttpContent shown;
        if (!changed) {
            shown = content;
        } else if (outLength == 0 && !last) {
            content.release();
            shown = null;
        } else {
            shown = content.replace(buf.alloc().buffer(outLength).writeBytes(out, 0, outLength));
            content.release();
        }
        if (last) {
            letGoOfLargeArrays();
        }
        return shown;
    }

    /** Drops scratch arrays a large chunk grew, so an idle keep-alive connection holds at most {@link #KEPT} bytes of each. */
    private void letGoOfLargeArrays() {
        if (in.length > KEPT) {
            in = new byte[0];
        }
        if (out.length > KEPT) {
            out = new byte[0];
        }
    }

    /** The bytes of scratch arrays held now, {@link #held} aside (tests). */
    int scratchBytes() {
        return in.length + out.length;
    }

    /** Whether the line under way is seen to end with a bare CR: a CR before the piece's end, or a held CR the piece goes on from. */
    private boolean bareCr(int pos, int end) {
        if (heldLength > 0 && held[heldLength - 1] == '\r' && pos < end) {
            return true;
        }
        for (int i = pos; i < end - 1; i++) {
            if (in[i] == '\r') {
                return true;
            }
        }
        return false;
    }

    /** Splits the chunk's {@code n} bytes into lines and judges each whole one; returns whether what goes on differs. */
    private boolean split(int n) {
        boolean changed = heldLength > 0; // a held line's start goes out with a later chunk, or stays
        int pos = 0;
        while (pos < n) {
            int nl = indexOfLf(in, pos, n);
            int end = nl < 0 ? n : nl + 1;
            if (passing) {
                emit(in, pos, end);
                passing = nl < 0;
                eventStart = false;
                keptBack = false;
            } else if (nl < 0) {
                if (bareCr(pos, end)) {
                    emit(held, 0, heldLength); // lines ended by a bare CR: no line feed is coming
                    emit(in, pos, end);
                    heldLength = 0;
                    passing = true;
                } else if (heldLength + end - pos <= MOST) {
                    System.arraycopy(in, pos, held, heldLength, end - pos);
                    heldLength += end - pos;
                    changed = true;
                } else {
                    emit(held, 0, heldLength); // too long to be the usage chunk: on it goes
                    emit(in, pos, end);
                    heldLength = 0;
                    passing = true;
                }
            } else if (heldLength == 0) {
                changed |= line(in, pos, end);
            } else if (heldLength + end - pos <= MOST) {
                System.arraycopy(in, pos, held, heldLength, end - pos);
                int length = heldLength + end - pos;
                heldLength = 0;
                line(held, 0, length);
            } else {
                emit(held, 0, heldLength);
                emit(in, pos, end);
                heldLength = 0;
                eventStart = false;
                keptBack = false;
            }
            pos = end;
        }
        return changed;
    }

    /** Judges one whole line, its end of line included; returns whether it was kept back. */
    private boolean line(byte[] b, int from, int to) {
        boolean blank = to - from == 1 || to - from == 2 && b[from] == '\r';
        if (keptBack) {
            keptBack = false;
            if (blank) {
                eventStart = true;
                return true; // the end of the usage chunk's event
            }
        }
        if (eventStart && usageOnly(b, from, to)) {
            keptBack = true;
            eventStart = false;
            return true;
        }
        emit(b, from, to);
        eventStart = blank;
        return false;
    }

    private void emit(byte[] b, int from, int to) {
        int length = to - from;
        if (out.length < outLength + length) {
            out = Arrays.copyOf(out, Math.max(outLength + length, 2 * out.length));
        }
        System.arraycopy(b, from, out, outLength, length);
        outLength += length;
    }

    /** Says whether the line is {@code data:} and a JSON object whose {@code choices} is empty and which has a {@code usage} object. */
    static boolean usageOnly(byte[] b, int from, int to) {
        if (to - from <= DATA.length || !Arrays.equals(b, from, from + DATA.length, DATA, 0, DATA.length)
                || !choicesEmpty(b, from, to)) {
            return false;
        }
        boolean empty = false;
        boolean usage = false;
        try (JsonParser p = BodyJson.FACTORY.createParser(b, from + DATA.length, to - from - DATA.length)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return false;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (name.equals("choices")) {
                    empty = value == JsonToken.START_ARRAY && p.nextToken() == JsonToken.END_ARRAY;
                } else if (name.equals("usage")) {
                    usage = value == JsonToken.START_OBJECT;
                }
                if (p.currentToken().isStructStart()) {
                    p.skipChildren();
                }
            }
            return p.currentToken() == JsonToken.END_OBJECT && p.nextToken() == null && empty && usage;
        } catch (IOException e) {
            return false; // not JSON: not the usage chunk
        }
    }

    /**
     * Says whether {@code "choices"}, a colon and an empty array ({@code []}, blanks allowed) appear:
     * a quick look before a parse. Inside a JSON string a quote is escaped, so text never matches.
     */
    static boolean choicesEmpty(byte[] b, int from, int to) {
        for (int i = from; i <= to - CHOICES.length; i++) {
            if (b[i] != '"' || !Arrays.equals(b, i, i + CHOICES.length, CHOICES, 0, CHOICES.length)) {
                continue;
            }
            int j = blanks(b, i + CHOICES.length, to);
            if (j < to && b[j] == ':') {
                j = blanks(b, j + 1, to);
                if (j < to && b[j] == '[') {
                    j = blanks(b, j + 1, to);
                    if (j < to && b[j] == ']') {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private static int blanks(byte[] b, int i, int to) {
        while (i < to && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) {
            i++;
        }
        return i;
    }

    private static int indexOfLf(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] == '\n') {
                return i;
            }
        }
        return -1;
    }

    /** Says whether the last line of {@code n} bytes that start a line and end one is blank ({@code \n} or {@code \r\n}). */
    private static boolean lastLineBlank(byte[] b, int n) {
        return n == 1 || b[n - 2] == '\n' || b[n - 2] == '\r' && (n == 2 || b[n - 3] == '\n');
    }
}
