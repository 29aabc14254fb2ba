package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.sim.ResponsesRequest.Refused;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

class ResponsesRequestTest {

    @Test
    void aStringInputIsOneUserMessageAfterTheInstructions() throws Refused {
        ResponsesRequest request = ResponsesRequest.read(new JsonObject().put("input", "hello")
                .put("instructions", "be brief"));

        assertThat(request.chat(new JsonArray())).isEqualTo(chat(message("system", "be brief"),
                message("user", "hello")));
        assertThat(request.store()).as("store is on unless the request says otherwise").isTrue();
        assertThat(request.stream()).isFalse();
        assertThat(request.maxOutputTokens()).isNull();
        assertThat(request.previousResponseId()).isNull();
    }

    @Test
    void itemsBecomeMessagesAndThoseWithoutARoleAreLeftOut() throws Refused {
        JsonArray input = new JsonArray()
                .add(message("developer", "rules"))
                .add(new JsonObject().put("type", "message").put("role", "user").put("content", new JsonArray()
                        .add(new JsonObject().put("type", "input_text").put("text", "one"))
                        .add(new JsonObject().put("type", "input_image").put("image_url", "x"))
                        .add(new JsonObject().put("type", "input_text").put("text", "two"))))
                .add(new JsonObject().put("role", "assistant").put("content", new JsonArray()
                        .add(new JsonObject().put("type", "output_text").put("text", "first"))
                        .add(new JsonObject().put("type", "output_text").put("text", "second"))))
                .add(new JsonObject().put("type", "function_call_output").put("call_id", "c").put("output", "{}"));

        JsonObject chat = ResponsesRequest.read(new JsonObject().put("input", input)).chat(new JsonArray());

        assertThat(chat).isEqualTo(chat(message("developer", "rules"), message("user", "one\ntwo"),
                message("assistant", "first")));
    }

    @Test
    void aContinuationIsThePreviousConversationWithoutItsSystemMessageThenTheNewInput() throws Refused {
        JsonObject first = ResponsesRequest.read(new JsonObject().put("input", "hello").put("instructions", "old"))
                .chat(new JsonArray());
        JsonArray history = ResponsesRequest.history(first, "[gpu-a] the");

        JsonObject second = ResponsesRequest.read(new JsonObject().put("input", "and then?")
                .put("instructions", "new").put("previous_response_id", "resp_1")).chat(history);

        assertThat(second).isEqualTo(chat(message("system", "new"), message("user", "hello"),
                message("assistant", "[gpu-a] the"), message("user", "and then?")));
        assertThat(ResponsesRequest.history(first, "")).as("an empty answer adds no message")
                .isEqualTo(new JsonArray().add(message("user", "hello")));
    }

    @Test
    void readsBooleansAsPydanticsLaxModeDoes() throws Refused {
        ResponsesRequest request = ResponsesRequest.read(new JsonObject().put("input", "x").put("stream", 1)
                .put("store", "no").put("max_output_tokens", 5.0).put("previous_response_id", "anything"));

        assertThat(request.stream()).isTrue();
        assertThat(request.store()).isFalse();
        assertThat(request.maxOutputTokens()).isEqualTo(5);
        assertThat(request.previousResponseId()).isEqualTo("anything");
    }

    @Test
    void refusesWhatVllmsValidationRefusesNamingTheField() {
        assertRefused(new JsonObject(), "body.input",
                "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'input'), 'msg': 'Field required'}");
        assertRefused(new JsonObject().put("input", 3), "body.input", "'string_type'");
        assertRefused(new JsonObject().put("input", "x").put("previous_response_id", 7),
                "body.previous_response_id", "'msg': 'Input should be a valid string'");
        assertRefused(new JsonObject().put("input", "x").put("instructions", new JsonArray()), "body.instructions",
                "'string_type'");
        assertRefused(new JsonObject().put("input", "x").put("max_output_tokens", 2.5), "body.max_output_tokens",
                "'int_type'");
    }

    private static void assertRefused(JsonObject body, String param, String inMessage) {
        assertThatThrownBy(() -> ResponsesRequest.read(body)).isInstanceOfSatisfying(Refused.class, e -> {
            assertThat(e.param()).isEqualTo(param);
            assertThat(e.getMessage()).contains(inMessage);
        });
    }

    private static JsonObject chat(JsonObject... messages) {
        JsonArray array = new JsonArray();
        for (JsonObject m : messages) {
            array.add(m);
        }
        return new JsonObject().put("messages", array);
    }

    private static JsonObject message(String role, String content) {
        return new JsonObject().put("role", role).put("content", content);
    }
}
