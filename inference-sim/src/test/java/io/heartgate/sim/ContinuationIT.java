package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node continuing a partial answer handed over from a node that died mid-stream, in each wire
 * format, on a real server over loopback.
 */
class ContinuationIT {

    /** Tokens 5 to 14 of any node's answer: what follows {@link #FIVE_TOKENS}. */
    private static final String TOKENS_5_TO_14 = " quickly while the scheduler routes each request to a live";
    /** The first 5 tokens of another node's answer, as a gateway carries them over. */
    private static final String FIVE_TOKENS = "[gpu-dead] the GPU streams tokens";

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
    void refusesContinueFinalMessageWithAGenerationPromptOrWithoutAnAssistantMessageAsVllmDoes() throws Exception {
        start(new SimConfigBuilder("gpu-v", List.of("m")));
        JsonArray partial = messages("hello", FIVE_TOKENS);

        for (Object generationPrompt : new Object[] {null, true, "yes"}) {
            JsonObject body = chat(partial).put("continue_final_message", true);
            if (generationPrompt != null) {
                body.put("add_generation_prompt", generationPrompt);
            }
            HttpResponse<String> r = sim.post("/v1/chat/completions", body.encode());
            assertThat(r.statusCode()).as("add_generation_prompt %s", generationPrompt).isEqualTo(400);
            assertThat(new JsonObject(r.body())).isEqualTo(error(
                    "Cannot set both `continue_final_message` and `add_generation_prompt` to True."));
        }
        HttpResponse<String> userLast = sim.post("/v1/chat/completions", chat(new JsonArray()
                .add(new JsonObject().put("role", "user").put("content", "hello")))
                .put("continue_final_message", true).put("add_generation_prompt", false).encode());
        assertThat(userLast.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(userLast.body())).isEqualTo(error(
                "continue_final_message is set but the final message is not an assistant message"));
        assertThat(sim.stats().getLong("continued")).isZero();
    }

    @Test
    void streamsAChatContinuationFromTokenKWithoutASecondMarker() throws Exception {
        start(new SimConfigBuilder("gpu-c", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1)));

        HttpResponse<String> r = sim.post("/v1/chat/completions", continuation(messages("hello", FIVE_TOKENS))
                .put("max_tokens", 10).put("stream", true)
                .put("stream_options", new JsonObject().put("include_usage", true)).encode());

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type")).hasValue("text/event-stream");
        assertThat(r.body()).endsWith("data: [DONE]\n\n");
        List<JsonObject> chunks = chunksOf(r.body());
        assertThat(chunks).hasSize(13); // the role chunk, 10 tokens, the finish chunk, the usage chunk
        assertThat(delta(chunks.get(0))).isEqualTo(new JsonObject().put("role", "assistant").put("content", ""));
        StringBuilder text = new StringBuilder();
        chunks.subList(1, 11).forEach(c -> text.append(delta(c).getString("content")));
        assertThat(text.toString()).isEqualTo(TOKENS_5_TO_14).doesNotContain("[");
        assertThat(choice(chunks.get(11)).getString("finish_reason")).isEqualTo("length");
        assertThat(chunks.get(12).getJsonObject("usage")).isEqualTo(new JsonObject()
                .put("prompt_tokens", 6).put("total_tokens", 16).put("completion_tokens", 10));
    }

    @Test
    void answersAChatContinuationWholeAndAFinalAssistantMessageWithoutTheFlagAnew() throws Exception {
        start(new SimConfigBuilder("gpu-w", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1)));

        JsonObject whole = new JsonObject(sim.post("/v1/chat/completions",
                continuation(messages("hello", FIVE_TOKENS)).put("max_completion_tokens", 10).encode()).body());
        JsonObject closed = new JsonObject(sim.post("/v1/chat/completions",
                chat(messages("hello", FIVE_TOKENS)).put("max_tokens", 3).encode()).body());
        JsonObject foreign = new JsonObject(sim.post("/v1/chat/completions",
                continuation(messages("hello", "Sure! Here")).put("max_tokens", 2).encode()).body());

        assertThat(message(whole).getString("content")).isEqualTo(TOKENS_5_TO_14);
        assertThat(message(whole).getString("role")).isEqualTo("assistant");
        assertThat(whole.getJsonObject("usage").getInteger("completion_tokens")).isEqualTo(10);
        assertThat(message(closed).getString("content")).isEqualTo("[gpu-w] the GPU");
        assertThat(message(foreign).getString("content")).as("not sim output: from token 1").isEqualTo(" the GPU");
    }

    @Test
    void aContinuationOfAWholeAnswerFinishesAtOnceWithStop() throws Exception {
        start(new SimConfigBuilder("gpu-e", List.of("m")).timing(5, Duration.ofMillis(1), Duration.ofMillis(1)));

        List<JsonObject> chunks = chunksOf(sim.post("/v1/chat/completions", continuation(messages("hi", FIVE_TOKENS))
                .put("stream", true).put("stream_options", new JsonObject()).encode()).body());
        JsonObject text = new JsonObject(sim.post("/v1/completions", new JsonObject().put("model", "m")
                .put("prompt", "Go on: [gpu-dead] the GPU streams").put("max_tokens", 9).encode()).body());

        assertThat(chunks).hasSize(3);
        assertThat(delta(chunks.get(0)).getString("role")).isEqualTo("assistant");
        assertThat(choice(chunks.get(1)).getString("finish_reason")).isEqualTo("stop");
        assertThat(chunks.get(2).getJsonObject("usage").getInteger("completion_tokens")).isZero();
        assertThat(choice(text).getString("text")).as("tokens 4 and 5 of 5").isEqualTo(" tokens");
        assertThat(choice(text).getString("finish_reason")).isEqualTo("stop");
    }

    @Test
    void completionsContinueAPromptThatEndsWithSimOutput() throws Exception {
        start(new SimConfigBuilder("gpu-m", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1)));

        JsonObject continued = new JsonObject(sim.post("/v1/completions", new JsonObject().put("model", "m")
                .put("prompt", "Q: why?\nA: " + FIVE_TOKENS + " ").put("max_tokens", 10).encode()).body());
        List<JsonObject> streamed = chunksOf(sim.post("/v1/completions", new JsonObject().put("model", "m")
                .put("prompt", "[gpu-dead] the").put("max_tokens", 2).put("stream", true).encode()).body());
        JsonObject fresh = new JsonObject(sim.post("/v1/completions", new JsonObject().put("model", "m")
                .put("prompt", "[gpu-dead] the GPU, then my own words").put("max_tokens", 2).encode()).body());

        assertThat(choice(continued).getString("text")).isEqualTo(TOKENS_5_TO_14);
        assertThat(choice(continued).getString("finish_reason")).isEqualTo("length");
        assertThat(streamed.stream().map(c -> choice(c).getString("text")).toList())
                .containsExactly(" GPU", " streams", "");
        assertThat(choice(fresh).getString("text")).isEqualTo("[gpu-m] the");
    }

    @Test
    void ollamaGenerateContinuesARawPromptOnly() throws Exception {
        start(new SimConfigBuilder("gpu-o", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1)));
        JsonObject options = new JsonObject().put("num_predict", 10);

        HttpResponse<String> raw = sim.post("/api/generate", new JsonObject().put("model", "m")
                .put("prompt", FIVE_TOKENS).put("raw", true).put("options", options).encode());
        JsonObject templated = new JsonObject(sim.post("/api/generate", new JsonObject().put("model", "m")
                .put("prompt", FIVE_TOKENS).put("stream", false).put("options", options).encode()).body());

        List<JsonObject> lines = raw.body().lines().map(JsonObject::new).toList();
        assertThat(lines).hasSize(11);
        StringBuilder text = new StringBuilder();
        lines.subList(0, 10).forEach(l -> text.append(l.getString("response")));
        assertThat(text.toString()).isEqualTo(TOKENS_5_TO_14);
        JsonObject last = lines.get(10);
        assertThat(last.getBoolean("done")).isTrue();
        assertThat(last.getString("done_reason")).isEqualTo("length");
        assertThat(last.getInteger("eval_count")).isEqualTo(10);
        assertThat(last.getInteger("prompt_eval_count")).isEqualTo(5);
        assertThat(last.containsKey("context")).as("Ollama sends no context for a raw prompt").isFalse();
        assertThat(templated.getString("response")).startsWith("[gpu-o] the GPU");
        assertThat(templated.containsKey("context")).isTrue();
    }

    @Test
    void ollamaChatContinuesAFinalAssistantMessageWithPrefillOn() throws Exception {
        start(new SimConfigBuilder("gpu-p", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1)));

        List<JsonObject> lines = sim.post("/api/chat", ollamaChat(messages("hello", FIVE_TOKENS), 10)).body()
                .lines().map(JsonObject::new).toList();

        assertThat(lines).hasSize(11);
        StringBuilder text = new StringBuilder();
        lines.subList(0, 10).forEach(l -> text.append(l.getJsonObject("message").getString("content")));
        assertThat(text.toString()).isEqualTo(TOKENS_5_TO_14);
        assertThat(lines.get(10).getString("done_reason")).isEqualTo("length");
        assertThat(lines.get(10).getInteger("eval_count")).isEqualTo(10);
        assertThat(lines.get(10).getInteger("prompt_eval_count")).isEqualTo(6);
    }

    @Test
    void ollamaChatAnswersAFinalAssistantMessageAnewWithPrefillOff() throws Exception {
        start(new SimConfigBuilder("gpu-q", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1))
                .ollamaPrefill(false));

        JsonObject whole = new JsonObject(sim.post("/api/chat", new JsonObject(
                ollamaChat(messages("hello", FIVE_TOKENS), 3)).put("stream", false).encode()).body());

        assertThat(whole.getJsonObject("message").getString("content")).isEqualTo("[gpu-q] the GPU");
        assertThat(sim.stats().getLong("continued")).isZero();
    }

    @Test
    void ollamaShowGivesATemplateThatLeavesTheLastAssistantTurnOpenWithPrefillOn() throws Exception {
        start(new SimConfigBuilder("gpu-t", List.of("m")));

        HttpResponse<String> show = sim.post("/api/show", "{\"model\":\"m\"}");

        assertThat(show.statusCode()).isEqualTo(200);
        String template = new JsonObject(show.body()).getString("template");
        assertThat(template).isEqualTo(OllamaApi.CONTINUING_TEMPLATE)
                .contains("{{ .Content }}{{ if not $last }}<|eot_id|>{{ end }}")
                .contains("range $i, $_ := .Messages");
        assertThat(new JsonObject(show.body()).getString("modelfile"))
                .contains("TEMPLATE \"\"\"" + OllamaApi.CONTINUING_TEMPLATE + "\"\"\"\n");
    }

    @Test
    void ollamaShowGivesATemplateThatClosesEveryTurnWithPrefillOff() throws Exception {
        start(new SimConfigBuilder("gpu-u", List.of("m")).ollamaPrefill(false));

        String template = new JsonObject(sim.post("/api/show", "{\"model\":\"m\"}").body()).getString("template");

        assertThat(template).isEqualTo(OllamaApi.CLOSING_TEMPLATE).doesNotContain("$last")
                .contains("{{ .Content }}<|im_end|>").endsWith("<|im_start|>assistant\n");
    }

    @Test
    void countsContinuedAnswersInStatsAndMetrics() throws Exception {
        start(new SimConfigBuilder("gpu-s", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1)));

        sim.post("/v1/chat/completions", continuation(messages("hello", FIVE_TOKENS)).put("max_tokens", 2).encode());
        sim.post("/v1/completions", new JsonObject().put("model", "m").put("prompt", FIVE_TOKENS)
                .put("max_tokens", 2).encode());
        sim.post("/api/chat", ollamaChat(messages("hello", FIVE_TOKENS), 2));
        sim.post("/api/chat", ollamaChat(new JsonArray().add(new JsonObject().put("role", "user")
                .put("content", "hello")), 2));
        sim.post("/v1/chat/completions", chat(messages("hello", FIVE_TOKENS)).put("max_tokens", 2).encode());

        assertThat(sim.stats().getLong("continued")).isEqualTo(3);
        assertThat(sim.stats().getLong("completed")).isEqualTo(5);
        assertThat(sim.get("/metrics").body()).contains("sim_continued_answers_total 3\n");
    }

    @Test
    void dropAfterTokensCutsContinuedSseAndNdjsonStreamsMidAnswer() throws Exception {
        start(new SimConfigBuilder("gpu-k", List.of("m")).timing(32, Duration.ofMillis(1), Duration.ofMillis(1))
                .faults(new Faults(false, 0, false, 3, null, null)));

        String sse = rawPost("/v1/chat/completions", continuation(messages("hello", FIVE_TOKENS))
                .put("stream", true).put("stream_options", new JsonObject().put("include_usage", true)).encode());
        String ndjson = rawPost("/api/chat", ollamaChat(messages("hello", FIVE_TOKENS), 20));

        List<JsonObject> events = sse.lines().filter(l -> l.startsWith("data: {"))
                .map(l -> new JsonObject(l.substring(6))).toList();
        assertThat(events).hasSize(4); // the role chunk and 3 tokens of this answer
        assertThat(events.stream().map(e -> delta(e).getString("content")).toList())
                .containsExactly("", " quickly", " while", " the");
        assertThat(events).allMatch(e -> choice(e).getValue("finish_reason") == null);
        assertThat(sse).doesNotContain("[DONE]").doesNotEndWith("0\r\n\r\n");
        List<String> lines = ndjson.lines().filter(l -> l.startsWith("{")).toList();
        assertThat(lines).hasSize(3).noneMatch(l -> l.contains("\"done\":true"));
        assertThat(ndjson).doesNotEndWith("0\r\n\r\n");
        await().atMost(Duration.ofSeconds(5)).until(() -> sim.stats().getLong("droppedConnections") == 2);
        assertThat(sim.stats().getLong("continued")).isEqualTo(2);
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

    /** A user message then an assistant message: the partial answer a gateway carries over. */
    private static JsonArray messages(String user, String assistant) {
        return new JsonArray().add(new JsonObject().put("role", "user").put("content", user))
                .add(new JsonObject().put("role", "assistant").put("content", assistant));
    }

    private static JsonObject chat(JsonArray messages) {
        return new JsonObject().put("model", "m").put("messages", messages);
    }

    /** An OpenAI chat asking vLLM to continue its final message. */
    private static JsonObject continuation(JsonArray messages) {
        return chat(messages).put("continue_final_message", true).put("add_generation_prompt", false);
    }

    private static String ollamaChat(JsonArray messages, int numPredict) {
        return chat(messages).put("options", new JsonObject().put("num_predict", numPredict)).encode();
    }

    private static JsonObject error(String message) {
        return new JsonObject().put("error", new JsonObject().put("message", message)
                .put("type", "BadRequestError").put("param", null).put("code", 400));
    }

    /** The chunks of an SSE answer, without {@code [DONE]}. */
    private static List<JsonObject> chunksOf(String body) {
        return List.of(body.split("\n\n")).stream().filter(e -> !e.equals("data: [DONE]"))
                .map(e -> new JsonObject(e.substring(6))).toList();
    }

    private static JsonObject choice(JsonObject chunk) {
        return chunk.getJsonArray("choices").getJsonObject(0);
    }

    private static JsonObject delta(JsonObject chunk) {
        return choice(chunk).getJsonObject("delta");
    }

    private static JsonObject message(JsonObject answer) {
        return choice(answer).getJsonObject("message");
    }
}
