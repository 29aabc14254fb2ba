package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Anthropic's Messages API as llama.cpp serves it, on a real server over loopback. */
class AnthropicApiIT {

    /** The first 5 tokens of another node's answer, as a gateway carries them over. */
    private static final String FIVE_TOKENS = "[gpu-dead] the GPU streams tokens";
    /** Tokens 5 to 14 of any node's answer: what follows {@link #FIVE_TOKENS}. */
    private static final String TOKENS_5_TO_14 = " quickly while the scheduler routes each request to a live";

    private SimHarness sim;

    private SimHarness start(SimConfigBuilder config) throws Exception {
        sim = new SimHarness(config.build());
        return sim;
    }

    @AfterEach
    void stop() throws Exception {
        if (sim != null) {
            sim.close();
        }
    }

    @Test
    void answersWholeInLlamaCppsFieldsAndOrder() throws Exception {
        start(new SimConfigBuilder("gpu-a", List.of("m", "n")));

        HttpResponse<String> cut = sim.post("/v1/messages", request(user("hello there"), 5).encode());
        JsonObject whole = new JsonObject(sim.post("/v1/messages", request(user("hello there"), 100)
                .put("model", "n").put("system", new JsonArray().add(text("be ")).add(text("brief")))
                .put("stop_sequences", new JsonArray().add("\n\n")).encode()).body());
        JsonObject blocks = new JsonObject(sim.post("/v1/messages", request(new JsonArray().add(new JsonObject()
                .put("role", "user").put("content", new JsonArray().add(text("hello")).add(text(" big world")))), 2)
                .encode()).body());

        assertThat(cut.statusCode()).isEqualTo(200);
        assertThat(cut.headers().firstValue("content-type")).hasValue("application/json; charset=utf-8");
        JsonObject answer = new JsonObject(cut.body());
        assertThat(answer.fieldNames()).containsExactly(
                "id", "type", "role", "content", "model", "stop_reason", "stop_sequence", "usage");
        assertThat(answer.getString("id")).startsWith("msg_gpua-");
        assertThat(answer.copy().put("id", "x")).isEqualTo(new JsonObject().put("id", "x")
                .put("type", "message").put("role", "assistant")
                .put("content", new JsonArray().add(text("[gpu-a] the GPU streams tokens")))
                .put("model", "m").put("stop_reason", "max_tokens").put("stop_sequence", null)
                .put("usage", new JsonObject().put("input_tokens", 2).put("output_tokens", 5)));
        assertThat(whole.getString("model")).isEqualTo("n");
        assertThat(whole.getString("stop_reason")).isEqualTo("end_turn");
        assertThat(whole.getJsonObject("usage")).as("system first").isEqualTo(new JsonObject()
                .put("input_tokens", 4).put("output_tokens", 8));
        assertThat(blocks.getJsonObject("usage").getInteger("input_tokens")).as("text blocks joined").isEqualTo(3);
        assertThat(sim.stats().getJsonObject("requests").getLong("anthropic.messages")).isEqualTo(3);
        assertThat(sim.stats().getJsonObject("usage")).isEqualTo(new JsonObject().put("promptTokens", 9)
                .put("completionTokens", 15));
        assertThat(sim.get("/metrics").body()).contains("sim_requests_total{endpoint=\"anthropic.messages\"} 3\n");
    }

    @Test
    void streamsLlamaCppsEventSequence() throws Exception {
        start(new SimConfigBuilder("gpu-s", List.of("m")));

        HttpResponse<String> r = sim.post("/v1/messages", request(user("hello there"), 3).put("stream", true)
                .encode());

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type")).hasValue("text/event-stream");
        List<Event> events = events(r.body());
        assertThat(events).extracting(Event::name).containsExactly("message_start", "content_block_start",
                "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
                "message_delta", "message_stop");
        assertThat(events).allMatch(e -> e.name().equals(e.data().getString("type")));
        JsonObject message = events.get(0).data().getJsonObject("message");
        assertThat(message.getString("id")).startsWith("msg_gpus-");
        assertThat(message.fieldNames()).containsExactly(
                "id", "type", "role", "content", "model", "stop_reason", "stop_sequence", "usage");
        assertThat(message.copy().put("id", "x")).isEqualTo(new JsonObject().put("id", "x")
                .put("type", "message").put("role", "assistant").put("content", new JsonArray())
                .put("model", "m").put("stop_reason", null).put("stop_sequence", null)
                .put("usage", new JsonObject().put("input_tokens", 2).put("output_tokens", 0)));
        assertThat(events.get(1).data()).isEqualTo(new JsonObject().put("type", "content_block_start")
                .put("index", 0).put("content_block", text("")));
        assertThat(events.subList(2, 5)).extracting(e -> e.data().getJsonObject("delta").getString("text"))
                .containsExactly("[gpu-s]", " the", " GPU");
        assertThat(events.get(2).data()).isEqualTo(new JsonObject().put("type", "content_block_delta")
                .put("index", 0).put("delta", new JsonObject().put("type", "text_delta").put("text", "[gpu-s]")));
        assertThat(events.get(5).data()).isEqualTo(new JsonObject().put("type", "content_block_stop")
                .put("index", 0));
        assertThat(events.get(6).data()).isEqualTo(new JsonObject().put("type", "message_delta")
                .put("delta", new JsonObject().put("stop_reason", "max_tokens").put("stop_sequence", null))
                .put("usage", new JsonObject().put("output_tokens", 3)));
        assertThat(events.get(7).data()).isEqualTo(new JsonObject().put("type", "message_stop"));
        assertThat(r.body()).doesNotContain("ping").doesNotContain("[DONE]").endsWith("\n\n");
        assertThat(events(sim.post("/v1/messages", request(user("hi"), 50).put("stream", true).encode()).body())
                .get(11).data().getJsonObject("delta").getString("stop_reason")).isEqualTo("end_turn");
    }

    @Test
    void continuesAFinalAssistantMessageFromTokenKAsLlamaCppPrefills() throws Exception {
        start(new SimConfigBuilder("gpu-c", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1)));
        JsonArray blocks = new JsonArray().add(text("[gpu-dead] the GPU")).add(text(" streams tokens"))
                .add(new JsonObject().put("type", "image"));

        JsonObject whole = new JsonObject(sim.post("/v1/messages",
                request(partial(FIVE_TOKENS), 10).encode()).body());
        List<Event> streamed = events(sim.post("/v1/messages",
                request(partial(blocks), 10).put("stream", true).encode()).body());
        JsonObject foreign = new JsonObject(sim.post("/v1/messages", request(partial("Sure! Here"), 2).encode())
                .body());
        JsonObject emptyBlocks = new JsonObject(sim.post("/v1/messages",
                request(partial(new JsonArray().add(new JsonObject().put("type", "image"))), 2).encode()).body());

        assertThat(whole.getJsonArray("content")).isEqualTo(new JsonArray().add(text(TOKENS_5_TO_14)));
        assertThat(whole.getString("stop_reason")).isEqualTo("max_tokens");
        assertThat(whole.getJsonObject("usage")).isEqualTo(new JsonObject().put("input_tokens", 6)
                .put("output_tokens", 10));
        StringBuilder text = new StringBuilder();
        streamed.stream().filter(e -> e.name().equals("content_block_delta"))
                .forEach(e -> text.append(e.data().getJsonObject("delta").getString("text")));
        assertThat(text.toString()).as("text blocks joined, as llama.cpp appends them").isEqualTo(TOKENS_5_TO_14);
        assertThat(streamed).hasSize(15);
        assertThat(content(foreign)).as("not sim output: from token 1").isEqualTo(" the GPU");
        assertThat(content(emptyBlocks)).as("no text block: llama.cpp drops the message").isEqualTo("[gpu-c] the");
        assertThat(sim.stats().getLong("continued")).isEqualTo(3);
        assertThat(sim.get("/metrics").body()).contains("sim_continued_answers_total 3\n");
    }

    @Test
    void aContinuationOfAWholeAnswerEndsAtOnceWithNoContentBlock() throws Exception {
        start(new SimConfigBuilder("gpu-e", List.of("m")).timing(5, Duration.ofMillis(1), Duration.ofMillis(1)));

        JsonObject whole = new JsonObject(sim.post("/v1/messages", request(partial(FIVE_TOKENS), 10).encode())
                .body());
        HttpResponse<String> streamed = sim.post("/v1/messages", request(partial(FIVE_TOKENS), 10)
                .put("stream", true).encode());

        assertThat(whole.getJsonArray("content")).isEmpty();
        assertThat(whole.getString("stop_reason")).isEqualTo("end_turn");
        assertThat(whole.getJsonObject("usage").getInteger("output_tokens")).isZero();
        assertThat(streamed.headers().firstValue("content-type")).hasValue("text/event-stream");
        List<Event> events = events(streamed.body());
        assertThat(events).extracting(Event::name).containsExactly("message_start", "message_delta", "message_stop");
        assertThat(events.get(1).data().getJsonObject("delta").getString("stop_reason")).isEqualTo("end_turn");
        assertThat(events.get(1).data().getJsonObject("usage").getInteger("output_tokens")).isZero();
    }

    @Test
    void refusesWhatAnthropicAndLlamaCppRefuseInAnthropicsErrorShape() throws Exception {
        start(new SimConfigBuilder("gpu-r", List.of("m")));
        JsonObject noMaxTokens = new JsonObject().put("model", "m").put("messages", user("hi"));
        JsonArray twoAssistants = partial(FIVE_TOKENS).add(new JsonObject().put("role", "assistant")
                .put("content", " quickly"));

        HttpResponse<String> missing = sim.post("/v1/messages", noMaxTokens.encode());
        assertThat(missing.statusCode()).isEqualTo(400);
        assertThat(missing.headers().firstValue("content-type")).hasValue("application/json; charset=utf-8");
        assertThat(new JsonObject(missing.body())).isEqualTo(error("invalid_request_error",
                "max_tokens: Field required"));
        assertRefused(request(user("hi"), 0), 400, error("invalid_request_error",
                "max_tokens: Input should be greater than or equal to 1"));
        assertRefused(noMaxTokens.copy().put("max_tokens", "5"), 400, error("invalid_request_error",
                "max_tokens: Input should be a valid integer"));
        assertRefused(new JsonObject().put("model", "m").put("max_tokens", 5), 400, error("invalid_request_error",
                "messages: Field required"));
        assertRefused(request(twoAssistants, 5), 400, error("invalid_request_error",
                "Cannot have 2 or more assistant messages at the end of the list."));
        assertRefused(request(new JsonArray().add(new JsonObject().put("role", "user").put("content", 7)), 5), 400,
                error("invalid_request_error", "Expected 'content' to be a string or an array"));
        assertRefused(request(user("hi"), 5).put("model", "nope"), 404, error("not_found_error", "model: nope"));
        HttpResponse<String> notJson = sim.post("/v1/messages", "{");
        assertThat(notJson.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(notJson.body()).getString("type")).isEqualTo("error");
        assertThat(sim.stats().getJsonObject("requests").getLong("anthropic.messages")).isEqualTo(8);
        assertThat(sim.stats().getLong("completed")).isZero();
    }

    @Test
    void injectedErrorsAndBusyAnswersHaveAnthropicsShape() throws Exception {
        start(new SimConfigBuilder("gpu-f", List.of("m")).concurrency(1, 0));

        for (int status : new int[] {429, 500, 502, 503}) {
            sim.post("/sim/faults", new JsonObject().put("errorStatus", status).encode());
            String type = switch (status) {
                case 429 -> "rate_limit_error";
                case 503 -> "overloaded_error";
                default -> "api_error";
            };
            assertRefused(request(user("hi"), 5), status, error(type, "simulated error (fault injection)"));
        }
        sim.post("/sim/faults", "{\"errorStatus\":0,\"hang\":true}");
        var holder = sim.http.sendAsync(sim.postRequest("/v1/messages", request(user("hi"), 5).encode()),
                HttpResponse.BodyHandlers.ofString());
        await().atMost(Duration.ofSeconds(10)).until(() -> sim.stats().getInteger("inFlight") == 1);
        assertRefused(request(user("hi"), 5), 503, error("overloaded_error", "server busy: 0 requests already waiting"));
        holder.cancel(true);
        assertThat(sim.stats().getLong("injectedErrors")).isEqualTo(4);
        assertThat(sim.stats().getLong("rejectedBusy")).isEqualTo(1);
    }

    @Test
    void dropAfterTokensCutsTheStreamMidAnswerWithoutMessageStop() throws Exception {
        start(new SimConfigBuilder("gpu-k", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1))
                .faults(new Faults(false, 0, false, 3, null, null)));

        String wire = rawPost("/v1/messages", request(partial(FIVE_TOKENS), 20).put("stream", true).encode());

        String body = wire.substring(wire.indexOf("\r\n\r\n") + 4).replaceAll("(?m)^[0-9a-f]+\r\n|\r\n", "");
        List<Event> events = events(body);
        assertThat(events).extracting(Event::name).containsExactly("message_start", "content_block_start",
                "content_block_delta", "content_block_delta", "content_block_delta");
        assertThat(events.subList(2, 5)).extracting(e -> e.data().getJsonObject("delta").getString("text"))
                .containsExactly(" quickly", " while", " the");
        assertThat(wire).doesNotContain("message_stop").doesNotContain("content_block_stop")
                .doesNotEndWith("0\r\n\r\n");
        await().atMost(Duration.ofSeconds(5)).until(() -> sim.stats().getLong("droppedConnections") == 1);
        assertThat(sim.stats().getLong("continued")).isEqualTo(1);
    }

    @Test
    void hangsBeforeTheFirstByteUntilTheClientGivesUp() throws Exception {
        start(new SimConfigBuilder("gpu-h", List.of("m")).faults(new Faults(false, 0, true, -1, null, null)));

        HttpRequest request = HttpRequest.newBuilder(sim.uri("/v1/messages")).timeout(Duration.ofMillis(300))
                .POST(HttpRequest.BodyPublishers.ofString(request(user("hi"), 5).put("stream", true).encode()))
                .build();

        assertThatThrownBy(() -> sim.http.send(request, HttpResponse.BodyHandlers.ofString()))
                .isInstanceOf(HttpTimeoutException.class);
        await().atMost(Duration.ofSeconds(5)).until(() -> sim.stats().getInteger("inFlight") == 0);
        assertThat(sim.stats().getLong("cancelledStreams")).isEqualTo(1);
    }

    @Test
    void withAnApiKeyTakesItAsXApiKeyAndRefusesInAnthropicsShape() throws Exception {
        start(new SimConfigBuilder("gpu-x", List.of("m")).apiKey("node-secret"));
        String body = request(user("hi"), 2).encode();

        HttpResponse<String> none = sim.post("/v1/messages", body);
        HttpResponse<String> xApiKey = sim.http.send(keyed(body, "x-api-key", "node-secret"),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> bearer = sim.http.send(keyed(body, "authorization", "Bearer node-secret"),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> chat = sim.http.send(HttpRequest.newBuilder(sim.uri("/v1/chat/completions"))
                .header("x-api-key", "node-secret").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(new JsonObject(none.body())).isEqualTo(error("authentication_error", "Invalid API Key"));
        assertThat(xApiKey.statusCode()).isEqualTo(200);
        assertThat(bearer.statusCode()).isEqualTo(200);
        assertThat(chat.statusCode()).as("vLLM's endpoints take the bearer token only").isEqualTo(401);
        assertThat(sim.stats().getLong("unauthorized")).isEqualTo(2);
    }

    private HttpRequest keyed(String body, String header, String value) {
        return HttpRequest.newBuilder(sim.uri("/v1/messages")).header(header, value)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private void assertRefused(JsonObject body, int status, JsonObject error) throws Exception {
        HttpResponse<String> r = sim.post("/v1/messages", body.encode());
        assertThat(r.statusCode()).as(body.encode()).isEqualTo(status);
        assertThat(new JsonObject(r.body())).as(body.encode()).isEqualTo(error);
    }

    /** One server-sent event: its {@code event:} name and its {@code data:} object. */
    private record Event(String name, JsonObject data) {
    }

    /** Parses a whole SSE body, failing on anything that is not an {@code event:} line then a {@code data:} line. */
    private static List<Event> events(String body) {
        List<Event> events = new ArrayList<>();
        for (String block : body.split("\n\n")) {
            String[] lines = block.split("\n");
            if (lines.length == 1 && lines[0].isBlank()) {
                continue;
            }
            assertThat(lines).hasSize(2);
            assertThat(lines[0]).startsWith("event: ");
            assertThat(lines[1]).startsWith("data: ");
            events.add(new Event(lines[0].substring(7), new JsonObject(lines[1].substring(6))));
        }
        return events;
    }

    /**
     * Posts {@code json} on a raw socket and returns every byte that reached the wire until the server
     * closed the connection; an HTTP client may discard what it buffered once it sees a cut stream.
     */
    private String rawPost(String path, String json) throws IOException {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        StringBuilder received = new StringBuilder();
        try (Socket socket = new Socket("127.0.0.1", sim.server.port())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            socket.getOutputStream().write(body);
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[4096];
            int n;
            try {
                while ((n = in.read(buf)) >= 0 && received.length() < 1_000_000) {
                    received.append(new String(buf, 0, n, StandardCharsets.UTF_8));
                }
            } catch (IOException e) {
                // a reset instead of a clean close also ends the stream
            }
        }
        return received.toString();
    }

    private static JsonObject request(JsonArray messages, int maxTokens) {
        return new JsonObject().put("model", "m").put("max_tokens", maxTokens).put("messages", messages);
    }

    private static JsonArray user(String text) {
        return new JsonArray().add(new JsonObject().put("role", "user").put("content", text));
    }

    /** A user message then an assistant message ({@code content} a string or blocks): a partial answer. */
    private static JsonArray partial(Object content) {
        return user("hello").add(new JsonObject().put("role", "assistant").put("content", content));
    }

    private static JsonObject text(String text) {
        return new JsonObject().put("type", "text").put("text", text);
    }

    private static String content(JsonObject answer) {
        return answer.getJsonArray("content").getJsonObject(0).getString("text");
    }

    private static JsonObject error(String type, String message) {
        return new JsonObject().put("type", "error")
                .put("error", new JsonObject().put("type", type).put("message", message));
    }
}
