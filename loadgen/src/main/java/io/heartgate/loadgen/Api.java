package io.heartgate.loadgen;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * Names the wire format the generator speaks: the request path and body it sends and the stream
 * format it reads back. Both ask for a stream, because time to first token only exists for one.
 */
public enum Api {

    /** {@code POST /api/chat}, {@code options.num_predict}; the answer is NDJSON ending in {@code done:true}. */
    OLLAMA("/api/chat") {
        @Override
        String body(ObjectMapper json, String model, List<Message> messages, int maxTokens) {
            ObjectNode o = head(json, model, messages);
            o.putObject("options").put("num_predict", maxTokens);
            return o.toString();
        }

        @Override
        StreamEvent read(String line) {
            return StreamReader.ndjson(line);
        }
    },

    /** {@code POST /v1/chat/completions}, {@code max_tokens}; the answer is SSE ending in {@code data: [DONE]}. */
    OPENAI("/v1/chat/completions") {
        @Override
        String body(ObjectMapper json, String model, List<Message> messages, int maxTokens) {
            return head(json, model, messages).put("max_tokens", maxTokens).toString();
        }

        @Override
        StreamEvent read(String line) {
            return StreamReader.sse(line);
        }
    };

    private final String path;

    Api(String path) {
        this.path = path;
    }

    /** Returns the request path, such as {@code /api/chat}. */
    public String path() {
        return path;
    }

    /** Returns the JSON request body asking {@code model} to continue {@code messages} as a stream. */
    abstract String body(ObjectMapper json, String model, List<Message> messages, int maxTokens);

    /** Reads one line of the answer; never throws. */
    abstract StreamEvent read(String line);

    private static ObjectNode head(ObjectMapper json, String model, List<Message> messages) {
        ObjectNode o = json.createObjectNode().put("model", model);
        ArrayNode array = o.putArray("messages");
        for (Message m : messages) {
            array.addObject().put("role", m.role()).put("content", m.content());
        }
        return o.put("stream", true);
    }
}
