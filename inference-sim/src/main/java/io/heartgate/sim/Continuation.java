package io.heartgate.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Optional;

/**
 * Finds where an answer that continues a partial one starts in the node's token sequence, for a
 * gateway that moves a stream to another node when its first node dies: it sends the request again
 * with the text already streamed, and the new node goes on from there as a real server continues a
 * prefilled answer. The answer then holds tokens k, k+1, ... of the node's sequence, where k is what
 * {@link TextSource#continuedFrom} reads from the text carried; token 0, the {@code [NAME]} marker, is
 * never sent twice. Stateless.
 */
final class Continuation {

    private Continuation() {
    }

    /** Returns the last of a chat request's {@code messages}, when there is one and it is an object. */
    static Optional<JsonObject> lastMessage(JsonObject body) {
        if (body.getValue("messages") instanceof JsonArray messages && !messages.isEmpty()
                && messages.getValue(messages.size() - 1) instanceof JsonObject last) {
            return Optional.of(last);
        }
        return Optional.empty();
    }

    /** Says whether {@code message} is an assistant message. */
    static boolean isAssistant(JsonObject message) {
        return "assistant".equals(message.getValue("role"));
    }

    /**
     * Returns the first token of an answer that continues the assistant {@code message}: the tokens its
     * content holds, or 1 when that is not sim output (the model goes on from whatever it was given,
     * without a second marker).
     */
    static int fromAssistant(JsonObject message) {
        int k = message.getValue("content") instanceof String s ? TextSource.continuedFrom(s) : -1;
        return k < 0 ? 1 : k;
    }

    /**
     * Returns the first token of the answer to a raw {@code prompt} (a completion, no chat template):
     * when the prompt ends with sim output, from its last {@code [} on, the tokens that output holds, so
     * the answer goes on from there; else 0, a new answer.
     */
    static int fromPrompt(Object prompt) {
        if (!(prompt instanceof String s)) {
            return 0;
        }
        int marker = s.lastIndexOf('[');
        int k = marker < 0 ? -1 : TextSource.continuedFrom(s.substring(marker));
        return Math.max(k, 0);
    }
}
