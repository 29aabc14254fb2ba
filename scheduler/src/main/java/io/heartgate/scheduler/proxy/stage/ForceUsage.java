package io.heartgate.scheduler.proxy.stage;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.heartgate.scheduler.request.BodyJson;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.JsonFlags;
import io.heartgate.scheduler.request.RequestFacts;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * The {@code --force-usage} stage: makes OpenAI streaming requests ({@code /v1/chat/completions},
 * {@code /v1/completions} with {@code "stream": true}) ask for {@code stream_options.include_usage},
 * so that the node ends the stream with a usage chunk and streamed tokens are counted too, against
 * the key's {@code tpm=} as well, and marks the requests whose client did not ask for that chunk.
 * The option is added when the request has no {@code stream_options} (or {@code null}), added inside
 * the {@code stream_options} it has, and set to {@code true} over a client's own {@code false} (or
 * {@code 0}, {@code "no"}: what the servers read as false): a stream left uncounted would escape the
 * token limits. A client counts as not asking when it has no {@code stream_options}, {@code null},
 * an {@code include_usage} read as false or {@code null}, or a {@code stream_options} that leaves
 * {@code include_usage} out (as OpenAI, SGLang and Ollama read it) without asking for vLLM's
 * {@code continuous_usage_stats}. Where a field is repeated, the last one is changed, as Python's JSON parsers (the
 * servers') keep the last; so too of a repeated {@code stream}, which decides whether the option is
 * added at all, and which, as the servers' pydantic does, takes {@code 1} or {@code "true"} for
 * {@code true} ({@link JsonFlags}). A body that is not a JSON object, or whose option has some other type, is
 * left for the node to judge.
 */
final class ForceUsage implements Stage {

    private static final JsonFactory JSON = BodyJson.FACTORY;
    private static final byte[] OPTION = "\"stream_options\":{\"include_usage\":true}".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] OPTIONS_VALUE = "{\"include_usage\":true}".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] INCLUDE = "\"include_usage\":true".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] TRUE = "true".getBytes(StandardCharsets.US_ASCII);

    @Override
    public Set<RequestFacts.Field> reads() {
        return Set.of(RequestFacts.Field.STREAM);
    }

    @Override
    public void handle(Call call) {
        // Any explicit stream: the facts hold the first, and a later one (which the node reads) may differ.
        if (call.facts().stream() != null && call.method().equals("POST") && openAiGeneration(call.uri())) {
            Forced forced = rewrite(call.body());
            if (forced != null && call.body(forced.body()) && forced.unasked()) {
                call.usageUnasked();
            }
        }
        call.proceed();
    }

    static boolean openAiGeneration(String uri) {
        return Endpoint.of(uri).usageWhenAsked();
    }

    /**
     * A body made to ask for the usage chunk; {@code unasked} when the client had not asked for it
     * as the servers read it, so the chunk is the proxy's alone.
     */
    record Forced(byte[] body, boolean unasked) {
    }

    /** Returns {@code body} asking for the usage chunk, or {@code null} when it already does or is to be left. */
    static byte[] withUsage(byte[] body) {
        Forced forced = rewrite(body);
        return forced == null ? null : forced.body();
    }

    /** Returns {@code body} made to ask for the usage chunk, or {@code null} when it already does or is to be left. */
    static Forced rewrite(byte[] body) {
        try (JsonParser p = JSON.createParser(body)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null; // not an object: leave it to the node
            }
            int open = offset(p);
            if (open < 0) {
                return null; // not UTF-8 (UTF-16 or -32, which JSON allows): no byte offsets to splice at
            }
            Boolean stream = null; // the last stream's value, read as the servers read it
            JsonToken options = null; // the last stream_options' value
            int optionsAt = -1;
            boolean optionsEmpty = true;
            JsonToken include = null; // the last include_usage's value in it
            boolean continuous = false; // whether its last continuous_usage_stats reads as true
            Boolean includeFlag = null; // that value, read as the servers read it
            int includeAt = -1;
            int includeEnd = -1;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                boolean isOptions = name.equals("stream_options");
                JsonToken value = p.nextToken();
                if (name.equals("stream")) {
                    stream = JsonFlags.read(p, value);
                }
                if (isOptions) {
                    options = value;
                    optionsAt = offset(p);
                    optionsEmpty = true;
                    include = null;
                    includeFlag = null;
                    continuous = false;
                    if (value == JsonToken.START_OBJECT) {
                        while (p.nextToken() == JsonToken.FIELD_NAME) {
                            optionsEmpty = false;
                            String field = p.currentName();
                            boolean isInclude = field.equals("include_usage");
                            JsonToken inner = p.nextToken();
                            if (field.equals("continuous_usage_stats")) {
                                continuous = Boolean.TRUE.equals(JsonFlags.read(p, inner));
                            }
                            if (isInclude) {
                                include = inner;
                                includeAt = offset(p);
                                includeFlag = JsonFlags.read(p, inner); // reads a string to its end
                                includeEnd = (int) p.currentLocation().getByteOffset();
                            }
                            if (inner.isStructStart()) {
                                p.skipChildren();
                            }
                        }
                        continue; // at its closing brace
                    }
                }
                if (value.isStructStart()) {
                    p.skipChildren();
                }
            }
            if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
                return null; // broken or trailing JSON: the node says what is wrong, unchanged
            }
            if (!Boolean.TRUE.equals(stream)) {
                return null; // not a stream to the node, which refuses stream_options without one
            }
            if (options == null) {
                // The body asks to stream, so the object has a field: the option goes first, then a comma.
                return new Forced(splice(body, open + 1, 0, OPTION, true), true);
            }
            if (options == JsonToken.VALUE_NULL) {
                return new Forced(splice(body, optionsAt, 4, OPTIONS_VALUE, false), true);
            }
            if (options != JsonToken.START_OBJECT) {
                return null; // a type the node is to refuse
            }
            if (include == null) {
                // Unasked as OpenAI reads it; continuous_usage_stats asks vLLM for usage on every chunk.
                return new Forced(splice(body, optionsAt + 1, 0, INCLUDE, !optionsEmpty), !continuous);
            }
            if (include == JsonToken.VALUE_NULL || Boolean.FALSE.equals(includeFlag)) {
                // false as pydantic reads it: false, 0, "no", "off" and the like
                return new Forced(splice(body, includeAt, includeEnd - includeAt, TRUE, false), true);
            }
            return null; // true already (true, 1, "yes"...), or a value the node is to refuse
        } catch (IOException e) {
            return null; // broken JSON: the node says what is wrong, unchanged
        }
    }

    /** Returns where the current token starts in the bytes the parser reads. */
    private static int offset(JsonParser p) {
        return (int) p.currentTokenLocation().getByteOffset();
    }

    /** Returns {@code body} with {@code length} bytes at {@code at} replaced by {@code insert} (and a comma after it). */
    private static byte[] splice(byte[] body, int at, int length, byte[] insert, boolean comma) {
        int extra = comma ? 1 : 0;
        byte[] out = new byte[body.length - length + insert.length + extra];
        System.arraycopy(body, 0, out, 0, at);
        System.arraycopy(insert, 0, out, at, insert.length);
        if (comma) {
            out[at + insert.length] = (byte) ',';
        }
        System.arraycopy(body, at + length, out, at + insert.length + extra, body.length - at - length);
        return out;
    }
}
