package io.heartgate.scheduler.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.heartgate.scheduler.proxy.policy.RequestFacts;
import io.heartgate.scheduler.table.ModelNames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Set;

/**
 * Reads a request's {@link RequestFacts} from its aggregated body in one pass of Jackson's
 * streaming parser: top-level fields only, everything nested skipped without building a tree, and
 * the pass stops as soon as every field wanted is found. Routing always wants the model; the other
 * fields are read only when a stage wants them ({@link io.heartgate.scheduler.proxy.stage.Stage#reads}),
 * so that a long prompt after the model is not scanned for nothing. The model is the top-level
 * {@code model}, or Ollama's older {@code name} on {@code /api/show}, {@code /api/pull} and
 * {@code /api/delete}. A body that is not a JSON object gives {@link RequestFacts#NONE}: the node
 * will say what is wrong with it. Thread-safe.
 */
public final class RequestFactsReader {

    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxNestingDepth(256)
                    .maxStringLength(Integer.MAX_VALUE)
                    .build())
            .build();

    private final boolean wantsStream;
    private final boolean wantsNamedOnce;

    /** Creates a reader of the model and the {@code wanted} fields besides. */
    public RequestFactsReader(Set<RequestFacts.Field> wanted) {
        this.wantsStream = wanted.contains(RequestFacts.Field.STREAM);
        this.wantsNamedOnce = wanted.contains(RequestFacts.Field.MODEL_NAMED_ONCE);
    }

    /** Returns the facts of a request to {@code uri} with the readable bytes of {@code body}; indexes untouched. */
    public RequestFacts read(ByteBuf body, String uri) {
        if (!startsWithBrace(body)) {
            return RequestFacts.NONE;
        }
        boolean nameIsModel = namesModelByName(uri);
        if (body.hasArray()) {
            return read(body.array(), body.arrayOffset() + body.readerIndex(), body.readableBytes(), nameIsModel);
        }
        try (InputStream in = new ByteBufInputStream(body.duplicate()); JsonParser p = JSON.createParser(in)) {
            return read(p, nameIsModel);
        } catch (IOException e) {
            return RequestFacts.NONE;
        }
    }

    /** Returns the facts of {@code body[offset, offset+length)}; {@code nameIsModel} for Ollama's management paths. */
    public RequestFacts read(byte[] body, int offset, int length, boolean nameIsModel) {
        if (length == 0) {
            return RequestFacts.NONE;
        }
        try (JsonParser p = JSON.createParser(body, offset, length)) {
            return read(p, nameIsModel);
        } catch (IOException e) {
            return RequestFacts.NONE;
        }
    }

    private static boolean startsWithBrace(ByteBuf body) {
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

    private static final RequestFactsReader STREAM_FLAG = new RequestFactsReader(
            java.util.EnumSet.of(RequestFacts.Field.STREAM));

    /**
     * Returns whether a request to {@code uri} with {@code body} asks for a streamed answer: its
     * top-level {@code stream}, or when it has none, the API's default (Ollama's {@code /api/chat}
     * and {@code /api/generate} stream, OpenAI's endpoints do not). Reads the whole body when it has
     * no {@code stream}: for the rare request that needs it, never on the request path.
     */
    static boolean streams(ByteBuf body, String uri) {
        Boolean flag = STREAM_FLAG.read(body, uri).stream();
        if (flag != null) {
            return flag;
        }
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        return path.equals("/api/chat") || path.equals("/api/generate");
    }

    /** Returns whether {@code uri} is one of Ollama's calls that may name the model in {@code name}. */
    static boolean namesModelByName(String uri) {
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        return path.equals("/api/show") || path.equals("/api/pull") || path.equals("/api/delete");
    }

    private RequestFacts read(JsonParser p, boolean nameIsModel) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            return RequestFacts.NONE;
        }
        String model = null;
        String name = null;
        Boolean stream = null;
        boolean modelSeen = false;
        int modelFields = 0;
        try {
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (wantsNamedOnce && (field.equalsIgnoreCase("model") || nameIsModel && field.equalsIgnoreCase("name"))) {
                    modelFields++;
                }
                if (value.isStructStart()) {
                    p.skipChildren(); // nested: never a fact, whatever its name
                    if (field.equals("model")) {
                        modelSeen = true;
                        model = null;
                    }
                } else if (field.equals("model")) {
                    modelSeen = true;
                    model = value == JsonToken.VALUE_STRING ? p.getText() : null;
                } else if (field.equals("name") && nameIsModel && value == JsonToken.VALUE_STRING) {
                    name = p.getText();
                } else if (field.equals("stream") && wantsStream) {
                    stream = value == JsonToken.VALUE_TRUE ? Boolean.TRUE
                            : value == JsonToken.VALUE_FALSE ? Boolean.FALSE : null;
                }
                if (modelSeen && (!wantsStream || stream != null) && !wantsNamedOnce) {
                    break; // every field wanted is known: the rest of the body is the node's business
                }
            }
        } catch (IOException e) {
            // Broken JSON after the fields already read: route on those; the node will reject the body.
        }
        String chosen = modelSeen ? model : name;
        boolean twice = modelFields > 1;
        return chosen == null && stream == null && !twice ? RequestFacts.NONE
                : new RequestFacts(ModelNames.normalize(chosen), stream, null, null, null, twice);
    }
}
