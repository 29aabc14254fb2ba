package io.heartgate.scheduler.migration;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * What the client of a cut stream has been sent, read back from the bytes relayed to it: the
 * answer's text so far, how many events carried text (the gateway's count of tokens sent, one per
 * event as the servers stream them), the first node's {@code id}, {@code created}, {@code model}
 * and {@code system_fingerprint}, which every later event keeps, and what rules a continuation out.
 *
 * @param text the answer's text as the client has it
 * @param id the first node's {@code id} ({@code null} for Ollama, whose objects have none)
 * @param tokens the events that carried text
 * @param toolCalls a tool call was streamed: its arguments cannot be continued
 * @param reasoning the stream is still inside a reasoning block (reasoning sent, no answer text yet)
 * @param finished the answer had already ended (a finish reason or {@code [DONE]} was sent)
 * @param events every whole event sent
 * @param block Anthropic's index of the text block open at the cut (the text the next node's first
 *     block continues), or -1 when none is open
 * @param blocks how many Anthropic content blocks were started: the next node's are numbered on from here
 */
public record Sent(String text, int tokens, String id, JsonNode created, String model, String fingerprint,
                   boolean toolCalls, boolean reasoning, boolean finished, int events, int block, int blocks) {

    static final ObjectMapper JSON = new ObjectMapper();

    /** Returns what a stream of {@code form} sent in its first {@code length} bytes of {@code body}. */
    public static Sent read(Form form, byte[] body, int length) {
        if (form == Form.ANTHROPIC_MESSAGES) {
            return readAnthropic(body, length);
        }
        return form.sse() ? readSse(form, body, length) : readNdjson(form, body, length);
    }

    /**
     * Anthropic's SSE: {@code message_start} names the message, text comes in
     * {@code content_block_delta} events of type {@code text_delta} inside a text block, a
     * {@code tool_use} block or {@code input_json_delta} is a tool call, {@code thinking} is
     * reasoning, and {@code message_delta} with a stop reason or {@code message_stop} ends it.
     */
    private static Sent readAnthropic(byte[] body, int length) {
        StringBuilder text = new StringBuilder();
        int tokens = 0;
        String id = null;
        String model = null;
        boolean tools = false;
        boolean thinking = false;
        boolean finished = false;
        int block = -1;
        int blocks = 0;
        List<String> data = sseData(body, length);
        for (String d : data) {
            JsonNode e = parse(d);
            switch (e == null ? "" : e.path("type").asText()) {
                case "message_start" -> {
                    id = e.path("message").path("id").asText(null);
                    model = e.path("message").path("model").asText(null);
                }
                case "content_block_start" -> {
                    int index = e.path("index").asInt(blocks);
                    blocks = Math.max(blocks, index + 1);
                    String type = e.path("content_block").path("type").asText();
                    block = type.equals("text") ? index : -1;
                    tools |= type.equals("tool_use") || type.equals("server_tool_use");
                    thinking = type.equals("thinking") || type.equals("redacted_thinking");
                }
                case "content_block_delta" -> {
                    JsonNode delta = e.path("delta");
                    tools |= delta.path("type").asText().equals("input_json_delta");
                    String piece = delta.path("type").asText().equals("text_delta") ? delta.path("text").asText("") : "";
                    if (!piece.isEmpty()) {
                        text.append(piece);
                        tokens++;
                    }
                }
                case "content_block_stop" -> block = e.path("index").asInt(block) == block ? -1 : block;
                case "message_delta" -> finished |= e.path("delta").hasNonNull("stop_reason");
                case "message_stop" -> finished = true;
                default -> {
                }
            }
        }
        return new Sent(text.toString(), tokens, id, null, model, null, tools, thinking, finished, data.size(), block,
                blocks);
    }

    /**
     * Ollama's NDJSON: one object per line, the text in {@code response} (a chat's in
     * {@code message.content}), {@code thinking} for reasoning, {@code tool_calls} in a chat's
     * message, {@code done: true} on the last. Ollama's objects have no id.
     */
    private static Sent readNdjson(Form form, byte[] body, int length) {
        String all = new String(body, 0, length, StandardCharsets.UTF_8);
        StringBuilder text = new StringBuilder();
        int tokens = 0;
        int events = 0;
        String model = null;
        boolean tools = false;
        boolean reasoned = false;
        boolean finished = false;
        int end;
        for (int start = 0; (end = all.indexOf('\n', start)) >= 0; start = end + 1) {
            JsonNode o = parse(all.substring(start, end));
            if (o == null || !o.isObject()) {
                continue;
            }
            events++;
            if (model == null) {
                model = o.path("model").asText(null);
            }
            finished |= o.path("done").asBoolean(false);
            JsonNode holder = form == Form.OLLAMA_CHAT ? o.path("message") : o;
            tools |= holder.has("tool_calls");
            reasoned |= !holder.path("thinking").asText("").isEmpty() && text.length() == 0;
            String piece = holder.path(form == Form.OLLAMA_CHAT ? "content" : "response").asText("");
            if (!piece.isEmpty()) {
                text.append(piece);
                tokens++;
            }
        }
        return new Sent(text.toString(), tokens, null, null, model, null, tools,
                reasoned && text.length() == 0, finished, events, -1, 0);
    }

    private static Sent readSse(Form form, byte[] body, int length) {
        StringBuilder text = new StringBuilder();
        int tokens = 0;
        int events = 0;
        String id = null;
        JsonNode created = null;
        String model = null;
        String fingerprint = null;
        boolean tools = false;
        boolean reasoned = false;
        boolean finished = false;
        for (String data : sseData(body, length)) {
            events++;
            if (data.equals("[DONE]")) {
                finished = true;
                continue;
            }
            JsonNode event = parse(data);
            if (event == null || !event.isObject()) {
                continue;
            }
            if (id == null && event.hasNonNull("id")) {
                id = event.get("id").asText();
                created = event.get("created");
                model = event.path("model").asText(null);
                fingerprint = event.path("system_fingerprint").asText(null);
            }
            JsonNode choice = event.path("choices").path(0);
            if (!choice.path("finish_reason").isMissingNode() && !choice.path("finish_reason").isNull()) {
                finished = true;
            }
            JsonNode delta = form == Form.OPENAI_CHAT ? choice.path("delta") : choice;
            String piece = delta.path(form == Form.OPENAI_CHAT ? "content" : "text").asText("");
            if (delta.has("tool_calls")) {
                tools = true;
            }
            if (!delta.path("reasoning_content").asText("").isEmpty() || !delta.path("reasoning").asText("").isEmpty()) {
                reasoned = text.length() == 0;
            }
            if (!piece.isEmpty()) {
                text.append(piece);
                tokens++;
            }
        }
        return new Sent(text.toString(), tokens, id, created, model, fingerprint, tools, reasoned && text.length() == 0,
                finished, events, -1, 0);
    }

    /** Returns the {@code data:} payload of every whole SSE event in the bytes (a part event at the end is left out). */
    static List<String> sseData(byte[] body, int length) {
        List<String> out = new ArrayList<>();
        String all = new String(body, 0, length, StandardCharsets.UTF_8).replace("\r\n", "\n");
        int start = 0;
        int end;
        while ((end = all.indexOf("\n\n", start)) >= 0) {
            StringBuilder data = new StringBuilder();
            for (String line : all.substring(start, end).split("\n")) {
                if (line.startsWith("data:")) {
                    if (data.length() > 0) {
                        data.append('\n');
                    }
                    data.append(line.substring(line.startsWith("data: ") ? 6 : 5));
                }
            }
            if (data.length() > 0) {
                out.add(data.toString().trim());
            }
            start = end + 2;
        }
        return out;
    }

    static JsonNode parse(String json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            return null;
        }
    }
}
