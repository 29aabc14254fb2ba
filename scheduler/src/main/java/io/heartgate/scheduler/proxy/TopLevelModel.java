package io.heartgate.scheduler.proxy;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * Finds the model a JSON request body names at its top level, by hand and without allocating: the
 * fast path of {@link RequestFactsReader} when only the model is wanted, which is every request of a
 * plain gateway (Jackson costs a parser, a context per level and a symbol table per request).
 *
 * <p>It gives Jackson's answer or declines: it reads strict JSON (RFC 8259) with UTF-8 checked as
 * Jackson checks it, a subset of what Jackson reads, and returns {@link #DECLINED} for anything else
 * (an escape or a byte above ASCII in a field name or the model, broken or unusual JSON, nesting past
 * {@value #MAX_DEPTH}). The first top-level {@code model} decides, as in the Jackson pass; one that is
 * not a string names none. Ollama's {@code name} (the last, as Jackson's pass keeps it) counts where
 * the path makes it the model and no {@code model} is present. Pure; the buffer's indexes untouched.
 */
final class TopLevelModel {

    /** Returned when the body is outside the grammar this reads: Jackson must decide. */
    static final String DECLINED = new String("declined"); // an identity no body's model can have
    /** Returned when the body's top level names no model. */
    static final String NONE = new String("none");

    static final int MAX_DEPTH = 64;
    private static final int MAX_NUMBER = 100;
    private static final byte[] MODEL = {'m', 'o', 'd', 'e', 'l'};
    private static final byte[] NAME = {'n', 'a', 'm', 'e'};

    private final ByteBuf b;
    private final int end;
    private int i;

    private TopLevelModel(ByteBuf body) {
        this.b = body;
        this.i = body.readerIndex();
        this.end = body.writerIndex();
    }

    /**
     * Returns the model {@code body} names (not normalised), {@link #NONE} or {@link #DECLINED};
     * {@code nameIsModel} when Ollama's {@code name} names the model (its management paths).
     */
    static String find(ByteBuf body, boolean nameIsModel) {
        return new TopLevelModel(body).object(nameIsModel);
    }

    private String object(boolean nameIsModel) {
        space();
        if (!take('{')) {
            return DECLINED;
        }
        String name = null;
        space();
        if (take('}')) {
            return NONE;
        }
        while (true) {
            if (!take('"')) {
                return DECLINED;
            }
            int keyStart = i;
            if (!plainString()) {
                return DECLINED;
            }
            int keyEnd = i - 1;
            if (!colon()) {
                return DECLINED;
            }
            if (is(keyStart, keyEnd, MODEL)) {
                if (i < end && b.getByte(i) == '"') {
                    String model = plainValue();
                    return model != null ? model : DECLINED;
                }
                return value(0) ? NONE : DECLINED; // named, but not by a string: no model
            }
            if (nameIsModel && is(keyStart, keyEnd, NAME) && i < end && b.getByte(i) == '"') {
                name = plainValue();
                if (name == null) {
                    return DECLINED;
                }
            } else if (!value(0)) {
                return DECLINED;
            }
            space();
            if (take('}')) {
                return name != null ? name : NONE;
            }
            if (!take(',')) {
                return DECLINED;
            }
            space();
        }
    }

    private boolean is(int start, int stop, byte[] word) {
        if (stop - start != word.length) {
            return false;
        }
        for (int k = 0; k < word.length; k++) {
            if (b.getByte(start + k) != word[k]) {
                return false;
            }
        }
        return true;
    }

    /** Reads the string value at its opening quote if {@link #plainString} takes it; else {@code null}. */
    private String plainValue() {
        int start = ++i;
        return plainString() ? b.toString(start, i - 1 - start, StandardCharsets.US_ASCII) : null;
    }

    /** Reads up to a closing quote a string of printable ASCII without escapes; false otherwise. */
    private boolean plainString() {
        while (i < end) {
            byte c = b.getByte(i++);
            if (c == '"') {
                return true;
            }
            if (c < 0x20 || c == '\\') { // a negative byte is above ASCII
                return false;
            }
        }
        return false;
    }

    /** Skips one JSON value at nesting {@code depth}; false when it is not strict JSON. */
    private boolean value(int depth) {
        if (i >= end) {
            return false;
        }
        return switch (b.getByte(i)) {
            case '"' -> string();
            case '{' -> depth < MAX_DEPTH && container('}', true, depth + 1);
            case '[' -> depth < MAX_DEPTH && container(']', false, depth + 1);
            case 't' -> literal("true");
            case 'f' -> literal("false");
            case 'n' -> literal("null");
            default -> number();
        };
    }

    private boolean container(char close, boolean object, int depth) {
        i++;
        space();
        if (take(close)) {
            return true;
        }
        while (true) {
            if (object && (i >= end || b.getByte(i) != '"' || !string() || !colon())) {
                return false;
            }
            if (!value(depth)) {
                return false;
            }
            space();
            if (take(close)) {
                return true;
            }
            if (!take(',')) {
                return false;
            }
            space();
        }
    }

    /** Skips a string from its opening quote: escapes and UTF-8 checked. */
    private boolean string() {
        i++;
        while (i < end) {
            int c = b.getByte(i++) & 0xff;
            if (c == '"') {
                return true;
            }
            if (c == '\\') {
                if (!escape()) {
                    return false;
                }
            } else if (c < 0x20) {
                return false;
            } else if (c >= 0x80 && !utf8(c)) {
                return false;
            }
        }
        return false;
    }

    private boolean escape() {
        if (i >= end) {
            return false;
        }
        return switch (b.getByte(i++)) {
            case '"', '\\', '/', 'b', 'f', 'n', 'r', 't' -> true;
            case 'u' -> hex4();
            default -> false;
        };
    }

    private boolean hex4() {
        if (end - i < 4) {
            return false;
        }
        for (int k = 0; k < 4; k++) {
            byte h = b.getByte(i++);
            if (!(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F')) {
                return false;
            }
        }
        return true;
    }

    /** Checks the continuation bytes of a multi-byte sequence led by {@code lead}. */
    private boolean utf8(int lead) {
        int more = lead >= 0xC2 && lead <= 0xDF ? 1 : lead >= 0xE0 && lead <= 0xEF ? 2
                : lead >= 0xF0 && lead <= 0xF4 ? 3 : 0;
        if (more == 0 || end - i < more) {
            return false;
        }
        for (int k = 0; k < more; k++) {
            if ((b.getByte(i++) & 0xC0) != 0x80) {
                return false;
            }
        }
        return true;
    }

    private boolean literal(String word) {
        for (int k = 0; k < word.length(); k++) {
            if (!take(word.charAt(k))) {
                return false;
            }
        }
        return endOfToken();
    }

    /** {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?}, at most {@value #MAX_NUMBER} bytes. */
    private boolean number() {
        int start = i;
        take('-');
        if (!take('0') && digits() == 0 // a leading zero is followed by no digit: endOfToken refuses one
                || take('.') && digits() == 0) {
            return false;
        }
        if (take('e') || take('E')) {
            if (!take('+')) {
                take('-');
            }
            if (digits() == 0) {
                return false;
            }
        }
        return i - start <= MAX_NUMBER && endOfToken();
    }

    private int digits() {
        int n = 0;
        while (i < end && b.getByte(i) >= '0' && b.getByte(i) <= '9') {
            i++;
            n++;
        }
        return n;
    }

    /** A literal or number must be followed by a blank or a separator, as Jackson requires. */
    private boolean endOfToken() {
        byte c = i < end ? b.getByte(i) : 0; // at the end the object is not closed: broken either way
        return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
    }

    /** Takes a colon between blanks. */
    private boolean colon() {
        space();
        boolean found = take(':');
        space();
        return found;
    }

    private void space() {
        while (i < end) {
            byte c = b.getByte(i);
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                return;
            }
            i++;
        }
    }

    private boolean take(char c) {
        if (i < end && b.getByte(i) == c) {
            i++;
            return true;
        }
        return false;
    }
}
