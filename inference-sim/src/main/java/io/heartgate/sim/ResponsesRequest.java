package io.heartgate.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;

/**
 * A Responses API request ({@code POST /v1/responses}) read as vLLM reads it before it renders the
 * prompt: {@code input} (a string, or a list of message items), {@code instructions},
 * {@code max_output_tokens}, {@code stream}, {@code store} (true unless it says otherwise) and
 * {@code previous_response_id}; the other fields are only echoed in the response.
 *
 * <p>The prompt's messages follow {@code construct_input_messages} in vllm-project/vllm
 * {@code vllm/frontend/entrypoints/openai/responses/utils.py}: the instructions as a first
 * {@code system} message, then the conversation of the previous response (its prompt without system
 * messages, so instructions do not carry over, then its answer), then the input: a string is one
 * {@code user} message; a list gives a message per item with a {@code role}, its content a string or
 * the texts of its parts (an assistant's first part, as vLLM reads an output message; the parts of any
 * other role joined by newlines, as vLLM's string content format joins them). Items without a role
 * (function calls and their outputs, reasoning) are left out: the sim has no tools.
 *
 * @param body the request as sent, for the fields a response echoes
 * @param input the input as chat messages, each with a {@code role} and a string {@code content}
 * @param instructions the system prompt of this request, or {@code null}
 * @param maxOutputTokens the token limit, or {@code null} for none
 * @param stream the answer goes out as server-sent events
 * @param store the answer is kept for {@code previous_response_id} and retrieval
 * @param previousResponseId the response whose conversation this one continues, or {@code null}
 */
record ResponsesRequest(JsonObject body, List<JsonObject> input, String instructions, Integer maxOutputTokens,
                        boolean stream, boolean store, String previousResponseId) {

    /**
     * A request that fails vLLM's request validation (pydantic, before any handler runs): 400 with
     * {@code param} the field's place, such as {@code body.input}, and the error pydantic names.
     */
    static final class Refused extends Exception {
        private final String param;

        Refused(String field, String type, String message) {
            super("1 validation error:\n  {'type': '" + type + "', 'loc': ('body', '" + field + "'), 'msg': '"
                    + message + "'}", null, false, false);
            this.param = "body." + field;
        }

        /** Returns the place of the field in error, as vLLM's {@code param}: {@code body.<field>}. */
        String param() {
            return param;
        }
    }

    /** Copies the input so the record stays as read. */
    ResponsesRequest {
        input = List.copyOf(input);
    }

    /**
     * Reads {@code body}.
     *
     * @throws Refused when {@code input} is missing or neither a string nor a list, or
     *     {@code previous_response_id}, {@code instructions} or {@code max_output_tokens} has the wrong type
     */
    static ResponsesRequest read(JsonObject body) throws Refused {
        Object input = body.getValue("input");
        if (input == null) {
            throw new Refused("input", "missing", "Field required");
        }
        if (!(input instanceof String) && !(input instanceof JsonArray)) {
            throw new Refused("input", "string_type", "Input should be a valid string");
        }
        Object previous = body.getValue("previous_response_id");
        if (previous != null && !(previous instanceof String)) {
            throw new Refused("previous_response_id", "string_type", "Input should be a valid string");
        }
        Object instructions = body.getValue("instructions");
        if (instructions != null && !(instructions instanceof String)) {
            throw new Refused("instructions", "string_type", "Input should be a valid string");
        }
        Object max = body.getValue("max_output_tokens");
        if (max != null && !(max instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue()))) {
            throw new Refused("max_output_tokens", "int_type", "Input should be a valid integer");
        }
        // Pydantic's lax mode, as vLLM reads every boolean: "stream": 1 streams, "store": "no" does not store.
        boolean store = body.getValue("store") == null || !OpenAiApi.laxFalse(body.getValue("store"));
        return new ResponsesRequest(body, messages(input), (String) instructions,
                max == null ? null : (int) Math.min(((Number) max).doubleValue(), Integer.MAX_VALUE),
                OpenAiApi.laxTrue(body.getValue("stream")), store, (String) previous);
    }

    /**
     * Returns the chat that vLLM renders for this request after the conversation {@code history} of the
     * previous response (empty for none): {@code {"messages": [...]}}, what the prefix cache and the
     * usage figures read.
     */
    JsonObject chat(JsonArray history) {
        JsonArray messages = new JsonArray();
        if (instructions != null && !instructions.isEmpty()) {
            messages.add(message("system", instructions));
        }
        history.forEach(messages::add);
        input.forEach(messages::add);
        return new JsonObject().put("messages", messages);
    }

    /**
     * Returns what a continuation of this request's answer starts with: the messages of {@code chat}
     * without its system messages, then {@code answer} as an assistant message unless it is empty.
     */
    static JsonArray history(JsonObject chat, String answer) {
        JsonArray history = new JsonArray();
        for (Object m : chat.getJsonArray("messages")) {
            if (!"system".equals(((JsonObject) m).getValue("role"))) {
                history.add(m);
            }
        }
        if (!answer.isEmpty()) {
            history.add(message("assistant", answer));
        }
        return history;
    }

    private static List<JsonObject> messages(Object input) {
        List<JsonObject> messages = new ArrayList<>();
        if (input instanceof String s) {
            messages.add(message("user", s));
            return messages;
        }
        for (Object item : (JsonArray) input) {
            if (item instanceof JsonObject o && o.getValue("role") instanceof String role) {
                messages.add(message(role, text(role, o.getValue("content"))));
            }
        }
        return messages;
    }

    /** Returns a message's content as one string: the string itself, or the texts of its parts. */
    private static String text(String role, Object content) {
        if (content instanceof String s) {
            return s;
        }
        List<String> texts = new ArrayList<>();
        if (content instanceof JsonArray parts) {
            for (Object part : parts) {
                if (part instanceof JsonObject p && p.getValue("text") instanceof String t) {
                    texts.add(t);
                }
            }
        }
        if (role.equals("assistant")) {
            return texts.isEmpty() ? "" : texts.get(0);
        }
        return String.join("\n", texts);
    }

    private static JsonObject message(String role, String content) {
        return new JsonObject().put("role", role).put("content", content);
    }
}
