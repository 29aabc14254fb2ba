package io.heartgate.scheduler.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.heartgate.scheduler.request.BodyJson;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.JsonFlags;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Reads a request body's whole top level, for the few rules that must see every field, never on a
 * plain request's path: the stall rule's stream flag and the second-model check of a key limited
 * to some models. {@link RequestFactsReader} reads what routing needs and stops there. Pure;
 * indexes of the body untouched.
 */
final class TopLevelFields {

    private static final JsonFactory JSON = BodyJson.FACTORY;

    private TopLevelFields() {
    }

    /** Returns whether {@code body}'s first byte after at most 64 blanks opens an object. */
    static boolean startsWithBrace(ByteBuf body) {
        int start = body.readerIndex();
        int end = Math.min(body.writerIndex(), start + 64);
        for (int i = start; i < end; i++) {
            byte c = body.getByte(i);
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                return c == '{';
            }
        }
        return false;
    }

    /**
     * Returns whether a request to {@code uri} with {@code body} asks for a streamed answer: its
     * last top-level {@code stream}, as the servers read a repeated field (Python's and Go's JSON
     * decoders keep the last), or when it has none (or the last is no flag, which the node refuses),
     * the API's default (Ollama's {@code /api/chat} and {@code /api/generate} stream, OpenAI's
     * endpoints do not). Reads the whole top level: for the rare request that needs it (the stall
     * rule's, one cut before its answer began), never on the request path. A first {@code true}
     * followed by {@code false} must not pass for a stream: the stall rule would then take a node
     * generating that whole answer for a stalled one. Indexes of {@code body} untouched.
     */
    static boolean streams(ByteBuf body, String uri) {
        Boolean[] flag = {null};
        eachTopLevelField(body, (field, p, value) -> {
            if (field.equals("stream")) {
                flag[0] = JsonFlags.read(p, value);
            }
        });
        if (flag[0] != null) {
            return flag[0];
        }
        // Ollama's pull, create and push stream progress by default too, but the stall rule asks about
        // generations only, whose first token a stalled node never sends.
        Endpoint endpoint = Endpoint.of(uri);
        return endpoint.role() == Endpoint.Role.GENERATION && endpoint.streamsByDefault();
    }

    /**
     * Returns whether {@code body}, sent to {@code uri}, names its model in more than one top-level
     * field: {@code model} in any case, or Ollama's {@code name} where it names the model. Servers
     * disagree on which one counts (vLLM takes the last {@code model}, Ollama also a {@code MODEL}),
     * so such a body must not pass a check of the first. Reads the whole top level, which routing
     * never needs: for the check of a key limited to some models, on its requests only. Indexes of
     * {@code body} untouched; a body that is not a JSON object names no model.
     */
    static boolean namesModelTwice(ByteBuf body, String uri) {
        boolean nameIsModel = Endpoint.of(uri).modelInName();
        int[] fields = {0};
        boolean whole = eachTopLevelField(body, (field, p, value) -> {
            if (field.equalsIgnoreCase("model") || nameIsModel && field.equalsIgnoreCase("name")) {
                fields[0]++;
            }
        });
        // Fails closed: past a point Jackson cannot read (a NaN, which Python's json takes) the node
        // may still find another model field.
        return fields[0] > 1 || !whole;
    }

    /** What {@link #eachTopLevelField} hands over: a field's name, and the parser on its value of type {@code value}. */
    private interface FieldVisitor {
        void visit(String field, JsonParser p, JsonToken value) throws IOException;
    }

    /**
     * Hands every top-level field of {@code body}, a JSON object, to {@code visitor} in order, skipping
     * what a field's object or array value holds; nothing when the body is no object. Broken JSON
     * ends the walk after the fields read. Returns {@code false} when the body is an object Jackson
     * could not read to its end. Indexes of {@code body} untouched.
     */
    private static boolean eachTopLevelField(ByteBuf body, FieldVisitor visitor) {
        if (!startsWithBrace(body)) {
            return true;
        }
        try (InputStream in = new ByteBufInputStream(body.duplicate()); JsonParser p = JSON.createParser(in)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return true;
            }
            JsonToken next;
            while ((next = p.nextToken()) == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                visitor.visit(field, p, value);
                if (value != null && value.isStructStart()) {
                    p.skipChildren();
                }
            }
            return next == JsonToken.END_OBJECT;
        } catch (IOException e) {
            return false; // broken JSON after the fields read: those stand
        }
    }
}
