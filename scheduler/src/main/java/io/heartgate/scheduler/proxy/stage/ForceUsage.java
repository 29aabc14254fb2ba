package io.heartgate.scheduler.proxy.stage;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.heartgate.scheduler.proxy.policy.RequestFacts;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * {@code --force-usage}: adds {@code "stream_options":{"include_usage":true}} to OpenAI streaming
 * requests ({@code /v1/chat/completions}, {@code /v1/completions} with {@code "stream": true}) that
 * have no {@code stream_options}, so that the node ends the stream with a usage chunk and streamed
 * tokens are counted too. A request that sets {@code stream_options} itself is left as it is; the
 * client then sees the usage chunk it did not ask for, as OpenAI documents it (no choices, a
 * {@code usage} object), which OpenAI's own clients accept.
 */
final class ForceUsage implements Stage {

    private static final JsonFactory JSON = new JsonFactory();
    private static final byte[] OPTION = "\"stream_options\":{\"include_usage\":true}".getBytes(StandardCharsets.US_ASCII);

    @Override
    public Set<RequestFacts.Field> reads() {
        return Set.of(RequestFacts.Field.STREAM);
    }

    @Override
    public void handle(Call call) {
        if (Boolean.TRUE.equals(call.facts().stream()) && call.method().equals("POST") && openAiGeneration(call.uri())) {
            byte[] body = call.body();
            byte[] forced = withUsage(body);
            if (forced != null) {
                call.body(forced);
            }
        }
        call.proceed();
    }

    static boolean openAiGeneration(String uri) {
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        return path.equals("/v1/chat/completions") || path.equals("/v1/completions");
    }

    /** Returns {@code body} with the option inserted after its opening brace, or {@code null} to leave it. */
    static byte[] withUsage(byte[] body) {
        int open = -1;
        for (int i = 0; i < body.length; i++) {
            if (body[i] == '{') {
                open = i;
                break;
            }
            if (body[i] != ' ' && body[i] != '\t' && body[i] != '\r' && body[i] != '\n') {
                return null;
            }
        }
        if (open < 0 || hasTopLevel(body, "stream_options")) {
            return null;
        }
        // The body asked to stream, so the object has a field: the option goes first, then a comma.
        byte[] out = new byte[body.length + OPTION.length + 1];
        System.arraycopy(body, 0, out, 0, open + 1);
        System.arraycopy(OPTION, 0, out, open + 1, OPTION.length);
        int at = open + 1 + OPTION.length;
        out[at++] = (byte) ',';
        System.arraycopy(body, open + 1, out, at, body.length - open - 1);
        return out;
    }

    private static boolean hasTopLevel(byte[] body, String field) {
        try (JsonParser p = JSON.createParser(body)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return true; // not an object: leave it to the node
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                if (p.currentName().equals(field)) {
                    return true;
                }
                if (p.nextToken().isStructStart()) {
                    p.skipChildren();
                }
            }
            return false;
        } catch (IOException e) {
            return true; // broken JSON: the node says what is wrong, unchanged
        }
    }
}
