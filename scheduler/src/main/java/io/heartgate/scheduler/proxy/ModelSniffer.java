package io.heartgate.scheduler.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.heartgate.scheduler.table.ModelNames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Reads the top-level {@code model} field of a JSON request body with Jackson's streaming parser:
 * it stops at the field and skips everything else without building a tree, so a 10 MB prompt costs
 * a scan, not an allocation. Returns the normalised name, or {@code null} when the body is not a
 * JSON object or names no model (such a request may go to any node). Thread-safe.
 */
public final class ModelSniffer {

    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxNestingDepth(256)
                    .maxStringLength(Integer.MAX_VALUE)
                    .build())
            .build();

    private ModelSniffer() {
    }

    /** Returns the normalised model named by {@code body[offset, offset+length)}, or {@code null}. */
    public static String model(byte[] body, int offset, int length) {
        if (length == 0) {
            return null;
        }
        try (JsonParser p = JSON.createParser(body, offset, length)) {
            return model(p);
        } catch (IOException e) {
            return null; // not JSON: the node will say what is wrong with it
        }
    }

    /**
     * Returns the normalised model named by the readable bytes of {@code body}, or {@code null};
     * the buffer's indexes are left as they were. Only a body that starts with <code>{</code> is parsed.
     */
    public static String model(ByteBuf body) {
        int start = body.readerIndex();
        int end = Math.min(body.writerIndex(), start + 64);
        int first = -1;
        for (int i = start; i < end; i++) {
            byte c = body.getByte(i);
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                first = c;
                break;
            }
        }
        if (first != '{') {
            return null;
        }
        if (body.hasArray()) {
            return model(body.array(), body.arrayOffset() + start, body.readableBytes());
        }
        try (InputStream in = new ByteBufInputStream(body.duplicate()); JsonParser p = JSON.createParser(in)) {
            return model(p);
        } catch (IOException e) {
            return null;
        }
    }

    private static String model(JsonParser p) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            return null;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if ("model".equals(name)) {
                return value == JsonToken.VALUE_STRING ? ModelNames.normalize(p.getText()) : null;
            }
            p.skipChildren();
        }
        return null;
    }
}
