package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.sim.AnthropicRequest.Refused;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

/** An Anthropic Messages request read as llama.cpp reads it: the chat it becomes and where the answer starts. */
class AnthropicRequestTest {

    @Test
    void becomesAChatWithTheSystemPromptFirstAndTextBlocksJoined() throws Refused {
        AnthropicRequest r = AnthropicRequest.read(body(5).put("system", new JsonArray().add(text("be "))
                        .add(new JsonObject().put("type", "image")).add(text("brief")))
                .put("messages", new JsonArray()
                        .add(message("user", new JsonArray().add(text("a")).add(text(" b"))))
                        .add(new JsonObject().put("role", "assistant"))
                        .add(message("assistant", new JsonArray().add(new JsonObject().put("type", "tool_use"))))
                        .add(message("user", null))
                        .add("not a message")));

        assertThat(r.chat()).isEqualTo(new JsonObject().put("messages", new JsonArray()
                .add(message("system", "be brief"))
                .add(message("user", "a b"))
                .add(message("user", ""))));
        assertThat(r.start()).isZero();
        assertThat(r.maxTokens()).isEqualTo(5);
        assertThat(r.stream()).isFalse();
        assertThat(AnthropicRequest.read(body(5).put("system", "s").put("stream", true)).chat()
                .getJsonArray("messages").getJsonObject(0)).isEqualTo(message("system", "s"));
        assertThat(AnthropicRequest.read(body(5).put("stream", "true")).stream()).as("a JSON boolean only").isFalse();
    }

    @Test
    void aFinalAssistantMessageIsContinuedWhereItsTextLeavesOff() throws Refused {
        assertThat(start(message("assistant", "[gpu-x] the GPU "))).isEqualTo(3);
        assertThat(start(message("assistant", new JsonArray().add(text("[gpu-x] the")).add(text(" GPU")))))
                .isEqualTo(3);
        assertThat(start(message("assistant", "Sure"))).as("not sim output").isEqualTo(1);
        assertThat(start(message("user", "[gpu-x] the GPU"))).isZero();
    }

    @Test
    void readsMaxTokensAsAnthropicDoes() throws Refused {
        assertThat(AnthropicRequest.read(body(0).put("max_tokens", 10.0)).maxTokens()).isEqualTo(10);
        assertThat(AnthropicRequest.read(body(0).put("max_tokens", 1L << 40)).maxTokens())
                .isEqualTo(Integer.MAX_VALUE);
        assertRefused(body(0).put("max_tokens", 2.5), "max_tokens: Input should be a valid integer");
        assertRefused(body(0).put("max_tokens", -3), "max_tokens: Input should be greater than or equal to 1");
        assertRefused(new JsonObject().put("messages", new JsonArray()), "max_tokens: Field required");
    }

    @Test
    void refusesWhatLlamaCppRefuses() {
        assertRefused(body(5).put("messages", "hi"), "messages: Input should be a valid list");
        assertRefused(body(5).put("messages", new JsonArray().add(new JsonObject().put("role", "user"))),
                "All non-assistant messages must contain 'content'");
        assertRefused(body(5).put("messages", new JsonArray().add(message("assistant", "a"))
                .add(message("assistant", new JsonArray().add(text("b"))))),
                "Cannot have 2 or more assistant messages at the end of the list.");
    }

    private static int start(JsonObject last) throws Refused {
        return AnthropicRequest.read(body(5).put("messages", new JsonArray().add(message("user", "hi")).add(last)))
                .start();
    }

    private static void assertRefused(JsonObject body, String message) {
        assertThatThrownBy(() -> AnthropicRequest.read(body)).isInstanceOf(Refused.class).hasMessage(message);
    }

    private static JsonObject body(int maxTokens) {
        return new JsonObject().put("model", "m").put("max_tokens", maxTokens).put("messages", new JsonArray()
                .add(message("user", "hi")));
    }

    private static JsonObject message(String role, Object content) {
        return new JsonObject().put("role", role).put("content", content);
    }

    private static JsonObject text(String text) {
        return new JsonObject().put("type", "text").put("text", text);
    }
}
