package io.heartgate.loadgen;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Parses single lines of streamed answers into {@link StreamEvent}s: Ollama's NDJSON and the SSE of
 * OpenAI-compatible servers (vLLM, llama.cpp, TGI). Pure and thread-safe; never throws: a line it
 * cannot read is {@link StreamEvent#NOTHING}, because a load generator counts answers, it does not
 * validate servers.
 */
public final class StreamReader {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String DONE = "[DONE]";

    private StreamReader() {
    }

    /**
     * Reads one NDJSON line of {@code /api/chat} or {@code /api/generate}: text from
     * {@code message.content} or {@code response}; the {@code done:true} object ends the answer and
     * carries {@code load_duration} and {@code prompt_eval_count}; {@code {"error":...}} is an error.
     */
    public static StreamEvent ndjson(String line) {
        JsonNode o = parse(line);
        if (o == null) {
            return StreamEvent.NOTHING;
        }
        String error = errorOf(o);
        String content = o.path("message").path("content").asText("");
        if (content.isEmpty()) {
            content = o.path("response").asText("");
        }
        boolean done = o.path("done").asBoolean(false);
        long load = done && o.path("load_duration").canConvertToLong() ? o.path("load_duration").asLong() : -1;
        int prompt = done && o.path("prompt_eval_count").canConvertToInt() ? o.path("prompt_eval_count").asInt() : -1;
        return new StreamEvent(content, done, load, prompt, error);
    }

    /**
     * Reads one SSE line: {@code data: [DONE]} ends the answer; other {@code data:} lines carry
     * {@code choices[0].delta.content} (chat) or {@code choices[0].text} (completions), perhaps
     * {@code usage.prompt_tokens}, or an {@code error}. Blank lines, comments and other fields carry nothing.
     */
    public static StreamEvent sse(String line) {
        if (line == null || !line.startsWith("data:")) {
            return StreamEvent.NOTHING;
        }
        String data = line.substring(5);
        data = data.startsWith(" ") ? data.substring(1) : data;
        if (data.strip().equals(DONE)) {
            return new StreamEvent("", true, -1, -1, null);
        }
        JsonNode o = parse(data);
        if (o == null) {
            return StreamEvent.NOTHING;
        }
        JsonNode choice = o.path("choices").path(0);
        String content = choice.path("delta").path("content").asText("");
        if (content.isEmpty()) {
            content = choice.path("text").asText("");
        }
        JsonNode prompt = o.path("usage").path("prompt_tokens");
        return new StreamEvent(content, false, -1, prompt.canConvertToInt() ? prompt.asInt() : -1, errorOf(o));
    }

    private static JsonNode parse(String text) {
        if (text == null || text.isBlank()) {
            return null;
        }
        try {
            JsonNode node = JSON.readTree(text);
            return node != null && node.isObject() ? node : null;
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    /** Returns Ollama's {@code "error":"text"} or OpenAI's {@code "error":{"message":...}}, else null. */
    private static String errorOf(JsonNode o) {
        JsonNode error = o.get("error");
        if (error == null || error.isNull()) {
            return null;
        }
        if (error.isTextual()) {
            return error.asText();
        }
        String message = error.path("message").asText("");
        return message.isEmpty() ? error.toString() : message;
    }
}
