package io.heartgate.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * An Anthropic Messages request ({@code POST /v1/messages}) read as llama.cpp's server reads it before it
 * generates: turned into an OpenAI-style chat, whose final assistant message, if any, is continued.
 *
 * <p>The conversion follows {@code server_chat_convert_anthropic_to_oai} in ggml-org/llama.cpp
 * {@code tools/server/server-chat.cpp}: {@code system} (a string, or text blocks joined without a
 * separator) becomes a first {@code system} message; a message's string content is kept; of an array of
 * blocks only the text blocks count here (joined, as the template renders them), and a message left with
 * none is dropped, as is an assistant message without {@code content}. Then {@code oaicompat_chat_params_parse}
 * ({@code tools/server/server-common.cpp}) prefills: with llama.cpp's default {@code prefill_assistant}
 * (opt-out {@code --no-prefill-assistant}, which the sim does not model), a final assistant message is
 * left open and its text appended to the prompt, so the model goes on with it; an assistant message just
 * before it is refused. The sim's answer then starts where that text leaves off ({@link Continuation}).
 *
 * <p>Where llama.cpp is lax and Anthropic is not, the sim takes Anthropic's side: {@code max_tokens} is
 * required (llama.cpp puts 4096 in for a missing one) and must be a whole number of at least 1.
 * {@code stop_sequences} is accepted and not applied, as {@code stop} on the sim's other endpoints.
 *
 * @param chat the request as a chat: {@code messages}, each with a string {@code content}, the system
 *     prompt first; what the prefix cache and the usage figures read
 * @param start the first token of the answer: 0 for a new one, more when it continues the final assistant
 *     message
 * @param maxTokens the request's {@code max_tokens}
 * @param stream the answer goes out as server-sent events
 */
record AnthropicRequest(JsonObject chat, int start, int maxTokens, boolean stream) {

    /** A request llama.cpp or Anthropic refuses with 400 {@code invalid_request_error}; the message says why. */
    static final class Refused extends Exception {
        Refused(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Reads {@code body}.
     *
     * @throws Refused when {@code max_tokens} or {@code messages} is missing or malformed, a message's
     *     content is neither a string nor an array, a message other than the assistant's has none, or two
     *     assistant messages end the conversation
     */
    static AnthropicRequest read(JsonObject body) throws Refused {
        int maxTokens = maxTokens(body.getValue("max_tokens"));
        if (!(body.getValue("messages") instanceof JsonArray messages)) {
            throw new Refused(body.getValue("messages") == null ? "messages: Field required"
                    : "messages: Input should be a valid list");
        }
        JsonArray chat = new JsonArray();
        if (body.getValue("system") != null) {
            chat.add(message("system", text(body.getValue("system"))));
        }
        for (Object m : messages) {
            if (m instanceof JsonObject message) {
                add(chat, message);
            }
        }
        return new AnthropicRequest(new JsonObject().put("messages", chat), start(chat), maxTokens,
                body.getValue("stream") instanceof Boolean b && b);
    }

    /** Returns {@code max_tokens} checked as Anthropic checks it. */
    private static int maxTokens(Object value) throws Refused {
        if (value == null) {
            throw new Refused("max_tokens: Field required");
        }
        if (!(value instanceof Number n) || n.doubleValue() != Math.rint(n.doubleValue())) {
            throw new Refused("max_tokens: Input should be a valid integer");
        }
        if (n.doubleValue() < 1) {
            throw new Refused("max_tokens: Input should be greater than or equal to 1");
        }
        return (int) Math.min(n.doubleValue(), Integer.MAX_VALUE);
    }

    /** Adds {@code message} to {@code chat} as llama.cpp converts it, or nothing when llama.cpp drops it. */
    private static void add(JsonArray chat, JsonObject message) throws Refused {
        String role = message.getValue("role") instanceof String r ? r : "";
        if (!message.containsKey("content")) {
            if (!role.equals("assistant")) {
                throw new Refused("All non-assistant messages must contain 'content'");
            }
            return;
        }
        Object content = message.getValue("content");
        if (content == null || content instanceof String) {
            chat.add(message(role, content == null ? "" : (String) content));
        } else if (content instanceof JsonArray blocks) {
            if (blocks.stream().anyMatch(AnthropicRequest::isText)) {
                chat.add(message(role, text(blocks)));
            }
        } else {
            throw new Refused("Expected 'content' to be a string or an array");
        }
    }

    /** Returns the first token of the answer: where a final assistant message leaves off, else 0. */
    private static int start(JsonArray chat) throws Refused {
        int n = chat.size();
        if (n == 0 || !Continuation.isAssistant(chat.getJsonObject(n - 1))) {
            return 0;
        }
        if (n > 1 && Continuation.isAssistant(chat.getJsonObject(n - 2))) {
            throw new Refused("Cannot have 2 or more assistant messages at the end of the list.");
        }
        return Continuation.fromAssistant(chat.getJsonObject(n - 1));
    }

    /** Returns a string as it is, or the texts of an array's text blocks joined; "" for anything else. */
    private static String text(Object value) {
        if (value instanceof String s) {
            return s;
        }
        StringBuilder sb = new StringBuilder();
        if (value instanceof JsonArray blocks) {
            for (Object block : blocks) {
                if (isText(block) && ((JsonObject) block).getValue("text") instanceof String t) {
                    sb.append(t);
                }
            }
        }
        return sb.toString();
    }

    private static boolean isText(Object block) {
        return block instanceof JsonObject o && "text".equals(o.getValue("type"));
    }

    private static JsonObject message(String role, String content) {
        return new JsonObject().put("role", role).put("content", content);
    }
}
