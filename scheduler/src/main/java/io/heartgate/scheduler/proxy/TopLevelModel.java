package io.heartgate.scheduler.proxy;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * Finds the model a JSON request body names at its top level, by hand and without allocating: the
 * fast path of {@link RequestFactsReader} when only the model is wanted (no affinity key, no stream
 * flag), which is every request of a plain gateway. Jackson's streaming parser, which it replaces
 * there, costs a parser, a context per level and a symbol table per request.
 *
 * <p>It gives the answer Jackson's pass would give, or declines: the grammar accepted is strict JSON
 * (RFC 8259) with UTF-8 checked as Jackson checks it, a subset of what Jackson accepts, and whatever
 * falls outside it (an escape in a field name or in the model, a byte above ASCII in either, broken
 * or unusual JSON, nesting deeper than {@value #MAX_DEPTH}) returns {@link #DECLINED} so the caller
 * asks Jackson. The first top-level {@code model} decides, as in the Jackson pass, which stops there;
 * a {@code model} that is not a string names none. Ollama's {@code name} (the last one, as Jackson's
 * pass keeps it) counts where the path makes it the model and no {@code model} is present. Pure; indexes of the buffer untouched.
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
     * Returns the model {@code body} names (not normalised), {@link #NONE}, or {@link #DECLINED}.
     *
     * @param nameIsModel whether Ollama's {@code name} names the model (its management paths)
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
            space();
            if (!take(':')) {
                return DECLINED;
            }
            space();
            if (is(keyStart, keyEnd, MODEL)) {
                if (i < end && b.getByte(i) == '"') {
                    i++;
                    int start = i;
                    return plainString() ? b.toString(start, i - 1 - start, StandardCharsets.US_ASCII) : DECLINED;
                }
                return value(0) ? NONE : DECLINED; // named, but not by a string: no model
            }
            if (nameIsModel && is(keyStart, keyEnd, NAME) && i < end && b.getByte(i) == '"') {
                i++;
                int start = i;
                if (!plainString()) {
                    return DECLINED;
                }
                name = b.toString(start, i - 1 - start, StandardCharsets.US_ASCII);
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
        byte c = b.getByte(i);
        switch (c) {
            case '"' -> {
                i++;
                return string();
            }
            case '{' -> {
                return depth < MAX_DEPTH && container('}', true, depth + 1);
            }
            case '[' -> {
                return depth < MAX_DEPTH && container(']', false, depth + 1);
            }
            case 't' -> {
                return literal("true");
            }
            case 'f' -> {
                return literal("false");
            }
            case 'n' -> {
                return literal("null");
            }
            default -> {
                return number();
            }
        }
    }

    private boolean container(char close, boolean object, int depth) {
        i++;
        space();
        if (take(close)) {
            return true;
        }
        while (true) {
            if (object) {
                if (!take('"') || !string()) {
                    return false;
                }
                space();
                if (!take(':')) {
                    return false;
                }
                space();
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

    /** Skips the rest of a string after its opening quote: escapes and UTF-8 checked. */
    private boolean string() {
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
        byte e = b.getByte(i++);
        switch (e) {
            case '"', '\\', '/', 'b', 'f', 'n', 'r', 't' -> {
                return true;
            }
            case 'u' -> {
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
            default -> {
                return false;
            }
        }
    }

    /** Checks the continuation bytes of a multi-byte sequence led by {@code lead}. */
    private boolean utf8(int lead) {
        int more;
        if (lead >= 0xC2 && lead <= 0xDF) {
            more = 1;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            more = 2;
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            more = 3;
        } else {
            return false;
        }
        if (end - i < more) {
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
        if (end - i < word.length()) {
            return false;
        }
        for (int k = 0; k < word.length(); k++) {
            if (b.getByte(i + k) != word.charAt(k)) {
                return false;
            }
        }
        i += word.length();
        return endOfToken();
    }

    /** {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?}, at most {@value #MAX_NUMBER} bytes. */
    private boolean number() {
        int start = i;
        if (i < end && b.getByte(i) == '-') {
            i++;
        }
        if (i >= end) {
            return false;
        }
        byte c = b.getByte(i);
        if (c == '0') {
            i++;
        } else if (c >= '1' && c <= '9') {
            digits();
        } else {
            return false;
        }
        if (i < end && b.getByte(i) == '.') {
            i++;
            if (digits() == 0) {
                return false;
            }
        }
        if (i < end && (b.getByte(i) == 'e' || b.getByte(i) == 'E')) {
            i++;
            if (i < end && (b.getByte(i) == '+' || b.getByte(i) == '-')) {
                i++;
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
        if (i >= end) {
            return false; // the object is not closed: broken either way
        }
        byte c = b.getByte(i);
        return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
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
