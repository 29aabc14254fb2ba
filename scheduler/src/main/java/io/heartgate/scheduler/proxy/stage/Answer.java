package io.heartgate.scheduler.proxy.stage;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.heartgate.scheduler.request.ErrorType;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A whole response the proxy gives itself instead of relaying a node's: an error, or (for later
 * stages) an answer it knows without asking a node. Immutable.
 *
 * @param status the HTTP status
 * @param contentType the body's media type
 * @param body the body's bytes; not copied, so not to be changed
 * @param error the error type when this is one of the proxy's own errors (counted by type), else {@code null}
 * @param headers more response headers, name to value, in order ({@code Retry-After}, rate limits)
 */
public record Answer(int status, String contentType, byte[] body, ErrorType error, Map<String, String> headers) {

    /** An answer with no header beyond its type and length. */
    public Answer(int status, String contentType, byte[] body, ErrorType error) {
        this(status, contentType, body, error, Map.of());
    }

    /** Returns a copy with the header {@code name: value} too. */
    public Answer withHeader(String name, String value) {
        Map<String, String> more = new LinkedHashMap<>(headers);
        more.put(name, value);
        return new Answer(status, contentType, body, error, Collections.unmodifiableMap(more));
    }

    /** Returns a copy with every header of {@code more} too. */
    public Answer withHeaders(Map<String, String> more) {
        if (more.isEmpty()) {
            return this;
        }
        Map<String, String> all = new LinkedHashMap<>(headers);
        all.putAll(more);
        return new Answer(status, contentType, body, error, Collections.unmodifiableMap(all));
    }

    private static final JsonFactory JSON = new JsonFactory();

    /** Returns an error in the OpenAI shape {@code {"error": {"message": ..., "type": ...}}} with the type's status. */
    public static Answer error(ErrorType type, String message) {
        return error(type, type.status(), message);
    }

    /** Returns an error in the OpenAI shape with another status than the type's usual one (414, 431). */
    public static Answer error(ErrorType type, int status, String message) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64 + message.length());
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.writeStartObject();
            g.writeObjectFieldStart("error");
            g.writeStringField("message", message);
            g.writeStringField("type", type.wireName());
            g.writeEndObject();
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // not reached: writing to memory
        }
        return new Answer(status, "application/json; charset=utf-8", out.toByteArray(), type);
    }
}
