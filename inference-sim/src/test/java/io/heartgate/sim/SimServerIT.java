package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SimServerIT {

    private SimHarness sim;

    private SimHarness start(SimConfigBuilder config) throws Exception {
        return start(config.build());
    }

    private SimHarness start(SimConfig config) throws Exception {
        sim = new SimHarness(config);
        return sim;
    }

    @AfterEach
    void stop() throws Exception {
        if (sim != null) {
            sim.close();
        }
    }

    @Test
    void streamsOllamaGenerateAsNdjsonShapedLikeTheRealServer() throws Exception {
        start(new SimConfigBuilder("gpu-a", List.of("llama3:8b")));

        HttpResponse<String> r = sim.post("/api/generate", "{\"model\":\"llama3:8b\",\"prompt\":\"why is the sky blue\"}");

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type")).hasValue("application/x-ndjson");
        List<JsonObject> lines = r.body().lines().map(JsonObject::new).toList();
        assertThat(lines).hasSize(9); // 8 tokens and the final object
        StringBuilder text = new StringBuilder();
        for (JsonObject line : lines.subList(0, 8)) {
            assertThat(line.getBoolean("done")).isFalse();
            assertThat(line.getString("model")).isEqualTo("llama3:8b");
            text.append(line.getString("response"));
        }
        assertThat(text.toString()).startsWith("[gpu-a]");
        JsonObject last = lines.get(8);
        assertThat(last.getBoolean("done")).isTrue();
        assertThat(last.getString("done_reason")).isEqualTo("stop");
        assertThat(last.getInteger("eval_count")).isEqualTo(8);
        assertThat(last.getInteger("prompt_eval_count")).isEqualTo(5);
        assertSameFields(last, sampleLines("ollama-api-generate-stream.ndjson").get(36));
        assertSameFields(lines.get(0), sampleLines("ollama-api-generate-stream.ndjson").get(0));
    }

    @Test
    void withAnApiKeyInferenceCallsNeedItAsABearerTokenAsVllmDoes() throws Exception {
        start(new SimConfigBuilder("gpu-k", List.of("llama3:8b")).apiKey("node-secret"));
        String chat = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

        HttpResponse<String> none = sim.post("/v1/chat/completions", chat);
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(new JsonObject(none.body())).isEqualTo(new JsonObject().put("error", "Unauthorized"));
        HttpResponse<String> wrong = sim.http.send(HttpRequest.newBuilder(sim.uri("/api/chat"))
                .header("authorization", "Bearer other").POST(HttpRequest.BodyPublishers.ofString(chat)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(wrong.statusCode()).isEqualTo(401);
        HttpResponse<String> right = sim.http.send(HttpRequest.newBuilder(sim.uri("/v1/chat/completions"))
                .header("authorization", "Bearer node-secret").POST(HttpRequest.BodyPublishers.ofString(chat)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(right.statusCode()).isEqualTo(200);
        assertThat(sim.get("/v1/models").statusCode()).as("agents probe without the key").isEqualTo(200);
        assertThat(sim.stats().getLong("unauthorized")).isEqualTo(2);
    }

    @Test
    void answersOllamaChatWithOneObjectWhenStreamIsFalse() throws Exception {
        start(new SimConfigBuilder("gpu-b", List.of("qwen2.5:7b")));

        HttpResponse<String> r = sim.post("/api/chat",
                "{\"model\":\"qwen2.5:7b\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"hi there\"}]}");

        JsonObject body = new JsonObject(r.body());
        assertThat(body.getBoolean("done")).isTrue();
        assertThat(body.getJsonObject("message").getString("content")).startsWith("[gpu-b]");
        assertThat(body.getInteger("eval_count")).isEqualTo(8);
        JsonObject sampleFinal = new JsonObject(
                sampleLines("ollama-api-chat-stream.ndjson").get(14).encode());
        assertSameFields(body, sampleFinal);
    }

    @Test
    void streamsOpenAiChatAsServerSentEventsEndingWithDone() throws Exception {
        start(new SimConfigBuilder("gpu-c", List.of("TinyLlama/TinyLlama-1.1B-Chat-v1.0")));

        HttpResponse<String> r = sim.post("/v1/chat/completions",
                "{\"model\":\"TinyLlama/TinyLlama-1.1B-Chat-v1.0\",\"stream\":true,"
                        + "\"stream_options\":{\"include_usage\":true},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}");

        assertThat(r.headers().firstValue("content-type")).hasValue("text/event-stream");
        assertThat(r.body()).endsWith("data: [DONE]\n\n");
        List<String> events = List.of(r.body().split("\n\n"));
        assertThat(events).allMatch(e -> e.startsWith("data: "));
        List<JsonObject> chunks = events.stream().filter(e -> !e.equals("data: [DONE]"))
                .map(e -> new JsonObject(e.substring(6))).toList();
        // role chunk, 8 tokens, the finish chunk, the usage chunk
        assertThat(chunks).hasSize(11);
        assertThat(delta(chunks.get(0)).getString("role")).isEqualTo("assistant");
        StringBuilder text = new StringBuilder();
        chunks.subList(1, 9).forEach(c -> text.append(delta(c).getString("content")));
        assertThat(text.toString()).startsWith("[gpu-c]");
        assertThat(chunks.get(9).getJsonArray("choices").getJsonObject(0).getString("finish_reason")).isEqualTo("stop");
        assertThat(chunks.get(10).getJsonObject("usage").getInteger("completion_tokens")).isEqualTo(8);

        List<JsonObject> sample = sampleEvents();
        Set<String> sampleKeys = new HashSet<>(sample.get(0).fieldNames());
        sampleKeys.remove("prompt_token_ids"); // vLLM-only debugging field
        assertThat(chunks.get(1).fieldNames()).containsAll(sampleKeys);
        assertThat(chunks.get(1).getJsonArray("choices").getJsonObject(0).fieldNames())
                .contains("index", "delta", "logprobs", "finish_reason");
    }

    /** The chunks of an SSE answer, without {@code [DONE]}. */
    private static List<JsonObject> chunksOf(String body) {
        return List.of(body.split("\n\n")).stream().filter(e -> !e.equals("data: [DONE]"))
                .map(e -> new JsonObject(e.substring(6))).toList();
    }

    @Test
    void readsStreamOptionsAsVllmDoes() throws Exception {
        start(new SimConfigBuilder("gpu-o", List.of("m")));
        String ask = "{\"model\":\"m\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],";

        // Present without include_usage: vLLM's default is true.
        List<JsonObject> empty = chunksOf(sim.post("/v1/chat/completions", ask + "\"stream\":true,\"stream_options\":{}}").body());
        assertThat(empty.get(empty.size() - 1).getJsonArray("choices")).isEmpty();
        assertThat(empty.get(empty.size() - 1).getJsonObject("usage").getInteger("completion_tokens")).isEqualTo(3);

        // null, 0 or "no": none; absent stream_options: none.
        for (String off : List.of("null", "0", "\"no\"")) {
            List<JsonObject> none = chunksOf(sim.post("/v1/chat/completions",
                    ask + "\"stream\":true,\"stream_options\":{\"include_usage\":" + off + "}}").body());
            assertThat(none).as(off).noneMatch(c -> c.containsKey("usage"));
        }

        // Continuous usage: every chunk carries the counts so far, then the usage chunk.
        List<JsonObject> running = chunksOf(sim.post("/v1/chat/completions",
                ask + "\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":true}}").body());
        assertThat(running).allMatch(c -> c.containsKey("usage"));
        assertThat(running.stream().map(c -> c.getJsonObject("usage").getInteger("completion_tokens")).toList())
                .containsExactly(0, 1, 2, 3, 3, 3);
        assertThat(running.get(running.size() - 1).getJsonArray("choices")).isEmpty();

        // Options without a stream: 400, as vLLM's validator answers; an empty object passes (falsy in Python).
        HttpResponse<String> refused = sim.post("/v1/chat/completions",
                ask + "\"stream_options\":{\"include_usage\":true}}");
        assertThat(refused.statusCode()).isEqualTo(400);
        assertThat(refused.body()).contains("Stream options can only be defined when `stream=True`.");
        assertThat(sim.post("/v1/chat/completions", ask + "\"stream_options\":{}}").statusCode()).isEqualTo(200);
        // A stream flag pydantic reads as true streams, options and all.
        List<JsonObject> lax = chunksOf(sim.post("/v1/chat/completions", ask + "\"stream\":1,\"stream_options\":{}}").body());
        assertThat(lax.get(lax.size() - 1).getJsonObject("usage").getInteger("completion_tokens")).isEqualTo(3);
    }

    @Test
    void answersOpenAiCompletionsWholeWithUsageAndHonoursMaxTokens() throws Exception {
        start(new SimConfigBuilder("gpu-d", List.of("m")));

        JsonObject body = new JsonObject(sim.post("/v1/completions",
                "{\"model\":\"m\",\"prompt\":\"one two three\",\"max_tokens\":3}").body());

        assertThat(body.getString("object")).isEqualTo("text_completion");
        JsonObject choice = body.getJsonArray("choices").getJsonObject(0);
        assertThat(choice.getString("text")).isEqualTo("[gpu-d] the GPU");
        assertThat(choice.getString("finish_reason")).isEqualTo("length");
        assertThat(body.getJsonObject("usage").getMap())
                .containsEntry("prompt_tokens", 3).containsEntry("completion_tokens", 3).containsEntry("total_tokens", 6);
    }

    @Test
    void streamsOpenAiCompletionsAndAnswersOllamaGenerateWhole() throws Exception {
        start(new SimConfigBuilder("gpu-m", List.of("m")));

        HttpResponse<String> stream = sim.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"p\",\"stream\":true}");
        List<JsonObject> chunks = List.of(stream.body().split("\n\n")).stream()
                .filter(e -> !e.equals("data: [DONE]")).map(e -> new JsonObject(e.substring(6))).toList();
        HttpResponse<String> whole = sim.post("/api/generate", "{\"model\":\"m\",\"prompt\":\"p\",\"stream\":false}");

        assertThat(stream.headers().firstValue("content-type")).hasValue("text/event-stream");
        assertThat(stream.body()).endsWith("data: [DONE]\n\n");
        assertThat(chunks).hasSize(9).allMatch(c -> c.getString("object").equals("text_completion"));
        assertThat(chunks.get(0).getJsonArray("choices").getJsonObject(0).getString("text")).isEqualTo("[gpu-m]");
        assertThat(chunks.get(8).getJsonArray("choices").getJsonObject(0).getString("finish_reason")).isEqualTo("stop");
        JsonObject body = new JsonObject(whole.body());
        assertThat(body.getString("response")).startsWith("[gpu-m] the GPU");
        assertThat(body.getBoolean("done")).isTrue();
        assertSameFields(body, sampleLines("ollama-api-generate-stream.ndjson").get(36));
    }

    @Test
    void servesTheLegacyOllamaEmbeddingsEndpoint() throws Exception {
        start(new SimConfigBuilder("gpu-e", List.of("nomic-embed-text")));

        JsonObject legacy = new JsonObject(sim.post("/api/embeddings",
                "{\"model\":\"nomic-embed-text\",\"prompt\":\"a\"}").body());
        JsonObject current = new JsonObject(sim.post("/api/embed",
                "{\"model\":\"nomic-embed-text\",\"input\":\"a\"}").body());

        assertThat(legacy.getJsonArray("embedding")).isEqualTo(current.getJsonArray("embeddings").getJsonArray(0));
        assertThat(sim.post("/api/embeddings", "{\"model\":\"nomic-embed-text\",\"prompt\":5}").statusCode())
                .isEqualTo(400);
    }

    @Test
    void slowsTokensDownAndAnswers429OnRequest() throws Exception {
        start(new SimConfigBuilder("gpu-s", List.of("m")).timing(4, Duration.ofMillis(1), Duration.ofMillis(1)));
        assertThat(sim.post("/sim/faults", "{\"tokenDelayMs\": 150}").statusCode()).isEqualTo(200);

        long start = System.nanoTime();
        HttpResponse<String> slow = sim.post("/api/generate", "{\"model\":\"m\",\"prompt\":\"p\"}");
        long tookMs = (System.nanoTime() - start) / 1_000_000;

        assertThat(slow.body().lines().count()).isEqualTo(5);
        assertThat(tookMs).as("3 gaps of 150 ms between 4 tokens").isGreaterThanOrEqualTo(450);

        assertThat(sim.post("/sim/faults", "{\"tokenDelayMs\": null, \"errorStatus\": 429}").statusCode()).isEqualTo(200);
        HttpResponse<String> limited = sim.post("/v1/chat/completions", "{\"model\":\"m\",\"messages\":[]}");
        assertThat(limited.statusCode()).isEqualTo(429);
        assertThat(new JsonObject(limited.body()).getJsonObject("error").getString("type")).isEqualTo("RateLimitError");
        assertThat(sim.get("/sim/faults").body()).contains("\"errorStatus\":429").contains("\"tokenDelayMs\":null");
    }

    @Test
    void answersUnknownModelsWithTheRealServersNotFoundShapes() throws Exception {
        start(new SimConfigBuilder("gpu-e", List.of("llama3:8b")));

        HttpResponse<String> ollama = sim.post("/api/generate", "{\"model\":\"custom-phi3-32k-Q4_K_M\",\"prompt\":\"x\"}");
        HttpResponse<String> openai = sim.post("/v1/chat/completions",
                "{\"model\":\"not-a-served-model\",\"messages\":[]}");

        assertThat(ollama.statusCode()).isEqualTo(404);
        assertThat(new JsonObject(ollama.body())).isEqualTo(new JsonObject(sample("ollama-404-model-not-found.json")));
        assertThat(openai.statusCode()).isEqualTo(404);
        assertThat(new JsonObject(openai.body())).isEqualTo(new JsonObject(sample("vllm-error-model-not-found.json")));
        assertThat(sim.stats().getLong("modelNotFound")).isEqualTo(2);
    }

    @Test
    void rejectsBadBodiesWithClearErrors() throws Exception {
        start(new SimConfigBuilder("gpu-e", List.of("llama3:8b")));

        assertThat(sim.post("/api/generate", "not json").statusCode()).isEqualTo(400);
        assertThat(sim.post("/api/generate", "{\"prompt\":\"no model\"}").body()).contains("model is required");
        assertThat(sim.post("/v1/chat/completions", "[1,2]").statusCode()).isEqualTo(400);
    }

    @Test
    void listsModelsLikeOllamaAndVllm() throws Exception {
        start(new SimConfigBuilder("gpu-f", List.of("llama3:8b", "qwen2.5:7b")));

        JsonObject tags = new JsonObject(sim.get("/api/tags").body());
        JsonObject ps = new JsonObject(sim.get("/api/ps").body());
        JsonObject models = new JsonObject(sim.get("/v1/models").body());

        assertThat(tags.getJsonArray("models")).hasSize(2);
        assertSameFields(tags.getJsonArray("models").getJsonObject(0),
                new JsonObject(sample("ollama-api-tags.json")).getJsonArray("models").getJsonObject(0));
        assertSameFields(ps.getJsonArray("models").getJsonObject(1),
                new JsonObject(sample("ollama-api-ps.json")).getJsonArray("models").getJsonObject(0));
        assertThat(models.getJsonArray("data").stream().map(o -> ((JsonObject) o).getString("id")))
                .containsExactly("llama3:8b", "qwen2.5:7b");
        JsonObject show = new JsonObject(sim.post("/api/show", "{\"model\":\"qwen2.5:7b\"}").body());
        assertThat(show.fieldNames()).containsExactlyInAnyOrder("modelfile", "parameters", "template", "details",
                "model_info", "capabilities", "modified_at");
        assertThat(show.getJsonObject("details")).isEqualTo(tags.getJsonArray("models").getJsonObject(1)
                .getJsonObject("details"));
        assertThat(show.getString("modelfile")).contains("# FROM qwen2.5:7b\n")
                .contains("sha256-" + tags.getJsonArray("models").getJsonObject(1).getString("digest"));
        assertThat(sim.post("/api/show", "{\"model\":\"mistral:7b\"}").statusCode()).isEqualTo(404);
        assertThat(sim.post("/api/show", "{}").body()).contains("model is required");
        assertThat(new JsonObject(sim.get("/api/version").body()).getString("version")).isNotBlank();
        assertThat(sim.get("/health").statusCode()).isEqualTo(200);
        assertThat(sim.get("/").body()).isEqualTo("Ollama is running");
    }

    @Test
    void loadsModelsOnDemandEvictsTheLeastRecentlyUsedAndCountsLoads() throws Exception {
        start(new SimConfigBuilder("gpu-l", List.of("llama3:8b", "qwen2.5:7b")).loading(1, Duration.ofMillis(200)));
        assertThat(new JsonObject(sim.get("/api/ps").body()).getJsonArray("models")).isEmpty();
        assertThat(new JsonObject(sim.get("/api/tags").body()).getJsonArray("models")).hasSize(2);

        JsonObject cold = finalObject(sim.post("/api/chat", chat("llama3:8b")));
        JsonObject warm = finalObject(sim.post("/api/chat", chat("llama3:8b")));
        assertThat(cold.getLong("load_duration")).isGreaterThanOrEqualTo(Duration.ofMillis(200).toNanos());
        assertThat(cold.getLong("total_duration")).isGreaterThan(cold.getLong("load_duration"));
        assertThat(warm.getLong("load_duration")).isZero();
        assertThat(psNames()).containsExactly("llama3:8b");

        assertThat(finalObject(sim.post("/api/chat", chat("qwen2.5:7b"))).getLong("load_duration")).isPositive();
        assertThat(psNames()).containsExactly("qwen2.5:7b");
        assertSameFields(new JsonObject(sim.get("/api/ps").body()).getJsonArray("models").getJsonObject(0),
                new JsonObject(sample("ollama-api-ps.json")).getJsonArray("models").getJsonObject(0));
        assertThat(sim.stats().getLong("modelLoads")).isEqualTo(2);
        assertThat(sim.stats().getLong("modelEvictions")).isEqualTo(1);
        assertThat(sim.get("/metrics").body()).contains("sim_model_loads_total 2\n", "sim_model_evictions_total 1\n",
                "sim_models_loaded 1.0\n");
    }

    private static String chat(String model) {
        return "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    }

    private static JsonObject finalObject(HttpResponse<String> r) {
        assertThat(r.statusCode()).isEqualTo(200);
        List<String> lines = r.body().lines().toList();
        JsonObject last = new JsonObject(lines.get(lines.size() - 1));
        assertThat(last.getBoolean("done")).isTrue();
        return last;
    }

    private List<String> psNames() throws Exception {
        return new JsonObject(sim.get("/api/ps").body()).getJsonArray("models").stream()
                .map(o -> ((JsonObject) o).getString("name")).toList();
    }

    @Test
    void returnsDeterministicUnitEmbeddings() throws Exception {
        start(new SimConfigBuilder("gpu-g", List.of("nomic-embed-text")));

        JsonObject a = new JsonObject(sim.post("/api/embed", "{\"model\":\"nomic-embed-text\",\"input\":[\"a\",\"b\"]}").body());
        JsonObject b = new JsonObject(sim.post("/v1/embeddings", "{\"model\":\"nomic-embed-text\",\"input\":\"a\"}").body());

        JsonArray first = a.getJsonArray("embeddings").getJsonArray(0);
        assertThat(first).hasSize(8);
        assertThat(b.getJsonArray("data").getJsonObject(0).getJsonArray("embedding")).isEqualTo(first);
        assertThat(a.getJsonArray("embeddings").getJsonArray(1)).isNotEqualTo(first);
        double norm = first.stream().mapToDouble(d -> ((Number) d).doubleValue() * ((Number) d).doubleValue()).sum();
        assertThat(norm).isCloseTo(1.0, Offset.offset(1e-9));
    }

    @Test
    void aConversationsNextTurnFindsItsHistoryInThePrefixCacheAndTheMetricsSayHowMuch() throws Exception {
        start(new SimConfigBuilder("gpu-k", List.of("m")).timing(2, Duration.ofMillis(1), Duration.ofMillis(1))
                .prefill(1000, 16, Duration.ZERO));
        String system = "{\"role\":\"system\",\"content\":\"" + "You are terse. ".repeat(20) + "\"}";
        String turn1 = "{\"model\":\"m\",\"messages\":[" + system + ",{\"role\":\"user\",\"content\":\"hello\"}]}";
        String turn2 = "{\"model\":\"m\",\"messages\":[" + system + ",{\"role\":\"user\",\"content\":\"hello\"},"
                + "{\"role\":\"assistant\",\"content\":\"hi\"},{\"role\":\"user\",\"content\":\"and now?\"}]}";
        assertThat(sim.post("/v1/chat/completions", turn1).statusCode()).isEqualTo(200);
        assertThat(sim.post("/v1/chat/completions", turn2).statusCode()).isEqualTo(200);
        String metrics = sim.get("/metrics").body();
        long queries = counter(metrics, "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"}");
        long hits = counter(metrics, "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"}");
        // The first turn is 323 chars ("<system>", the prompt, "<user>", "hello", each on its line): 20 whole blocks.
        assertThat(hits).isEqualTo(20 * 16 / 4);
        assertThat(queries).isGreaterThan(2 * hits);
    }

    private static long counter(String metrics, String series) {
        for (String line : metrics.split("\n")) {
            if (line.startsWith(series + " ")) {
                return (long) Double.parseDouble(line.substring(series.length() + 1));
            }
        }
        throw new AssertionError("no " + series);
    }

    @Test
    void queuesBeyondMaxConcurrencyAndShowsLoadInVllmMetrics() throws Exception {
        start(new SimConfigBuilder("gpu-h", List.of("m")).concurrency(1, 8)
                .timing(1000, Duration.ofMillis(50), Duration.ofMillis(1)));
        List<CompletableFuture<HttpResponse<InputStream>>> streams = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            streams.add(sim.http.sendAsync(sim.postRequest("/api/generate", "{\"model\":\"m\",\"prompt\":\"p\"}"),
                    HttpResponse.BodyHandlers.ofInputStream()));
        }

        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            String metrics = sim.get("/metrics").body();
            assertThat(metrics).contains("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1.0");
            assertThat(metrics).contains("vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2.0");
            assertThat(metrics).contains("vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 1.0");
        });
        for (CompletableFuture<HttpResponse<InputStream>> s : streams) {
            s.cancel(true);
            if (s.isDone() && !s.isCompletedExceptionally()) {
                s.join().body().close();
            }
        }
    }

    @Test
    void answersBusyInEachFormatOnceTheSlotsAndTheQueueAreFull() throws Exception {
        start(new SimConfigBuilder("gpu-q", List.of("m")).concurrency(1, 0)
                .faults(new Faults(false, 0, true, -1, null, null)));
        CompletableFuture<HttpResponse<String>> holder = sim.http.sendAsync(
                sim.postRequest("/api/generate", "{\"model\":\"m\",\"prompt\":\"p\"}"),
                HttpResponse.BodyHandlers.ofString());
        await().atMost(Duration.ofSeconds(10)).until(() -> sim.stats().getInteger("inFlight") == 1);

        HttpResponse<String> ollama = sim.post("/api/chat", "{\"model\":\"m\",\"messages\":[]}");
        HttpResponse<String> openai = sim.post("/v1/chat/completions", "{\"model\":\"m\",\"messages\":[]}");

        assertThat(ollama.statusCode()).isEqualTo(503);
        assertThat(ollama.body()).isEqualTo(
                "{\"error\":\"server busy, please try again.  maximum pending requests exceeded\"}");
        assertThat(openai.statusCode()).isEqualTo(503);
        assertThat(new JsonObject(openai.body())).isEqualTo(new JsonObject().put("error", new JsonObject()
                .put("message", "server busy: 0 requests already waiting")
                .put("type", "ServiceUnavailableError")
                .put("param", null)
                .put("code", 503)));
        assertThat(sim.stats().getLong("rejectedBusy")).isEqualTo(2);
        assertThat(sim.get("/metrics").body()).contains("sim_rejected_busy_total 2");
        holder.cancel(true);
    }

    @Test
    void stopsGeneratingWithin100MillisecondsOfTheClientDisconnecting() throws Exception {
        start(new SimConfigBuilder("gpu-i", List.of("m")).timing(10_000, Duration.ofMillis(10), Duration.ofMillis(1)));
        String body = "{\"model\":\"m\",\"stream\":true,\"messages\":[]}";

        // A raw socket, so the moment of the disconnect is exactly when we close it.
        try (Socket socket = new Socket("127.0.0.1", sim.server.port())) {
            socket.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                    + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.UTF_8));
            BufferedReader reader = new BufferedReader(
                    new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String line;
            int read = 0;
            while ((line = reader.readLine()) != null && !line.contains("[gpu-i]") && read++ < 1000) {
                // headers, the role chunk, then the first token, which names the node
            }
            assertThat(line).contains("[gpu-i]");
        }
        long closedAt = System.nanoTime();

        await().atMost(Duration.ofMillis(100)).pollInterval(Duration.ofMillis(5))
                .until(() -> sim.stats().getLong("cancelledStreams") == 1);
        long tokens = sim.stats().getLong("tokensSent");
        System.out.printf("[heartgate-test] sim saw the disconnect after %d ms%n",
                (System.nanoTime() - closedAt) / 1_000_000);
        assertThat(sim.stats().getInteger("inFlight")).isZero();
        // No token is generated after the cancel: the count holds across many token periods.
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2))
                .until(() -> sim.stats().getLong("tokensSent") == tokens);
        assertThat(sim.get("/metrics").body()).contains("sim_cancelled_streams_total 1");
    }

    @Test
    void generatesEverythingAtOnceWithZeroDelays() throws Exception {
        start(new SimConfigBuilder("gpu-z", List.of("m")).timing(32, Duration.ZERO, Duration.ZERO));

        JsonObject body = new JsonObject(sim.post("/v1/chat/completions",
                "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}").body());
        HttpResponse<String> stream = sim.post("/api/chat", "{\"model\":\"m\",\"messages\":[]}");

        assertThat(body.getJsonObject("usage").getInteger("completion_tokens")).isEqualTo(32);
        assertThat(stream.body().lines().count()).isEqualTo(33);
    }

    @Test
    void injectsFaultsAtRunTime() throws Exception {
        start(new SimConfigBuilder("gpu-j", List.of("m")));

        assertThat(sim.post("/sim/faults", "{\"failHealth\":true,\"errorStatus\":503}").statusCode()).isEqualTo(200);
        assertThat(sim.get("/health").statusCode()).isEqualTo(503);
        assertThat(sim.get("/api/version").statusCode()).isEqualTo(503);
        HttpResponse<String> busy = sim.post("/api/generate", "{\"model\":\"m\",\"prompt\":\"p\"}");
        assertThat(busy.statusCode()).isEqualTo(503);
        assertThat(busy.body()).isEqualTo(
                "{\"error\":\"server busy, please try again.  maximum pending requests exceeded\"}");

        assertThat(sim.post("/sim/faults", "{\"errorStatus\":500,\"failHealth\":false}").statusCode()).isEqualTo(200);
        assertThat(sim.get("/health").statusCode()).isEqualTo(200);
        assertThat(sim.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"p\"}").statusCode()).isEqualTo(500);

        assertThat(sim.post("/sim/faults", "{\"bogus\":1}").statusCode()).isEqualTo(400);
        assertThat(sim.post("/sim/faults", "{\"errorStatus\":418}").statusCode()).isEqualTo(400);
        assertThat(sim.post("/sim/faults", "nope").statusCode()).isEqualTo(400);

        sim.http.send(HttpRequest.newBuilder(sim.uri("/sim/faults")).DELETE().build(),
                HttpResponse.BodyHandlers.discarding());
        assertThat(sim.post("/api/generate", "{\"model\":\"m\",\"prompt\":\"p\",\"stream\":false}").statusCode())
                .isEqualTo(200);
        assertThat(sim.stats().getLong("injectedErrors")).isEqualTo(2);
    }

    @Test
    void dropsTheConnectionAfterKTokens() throws Exception {
        start(new SimConfigBuilder("gpu-k", List.of("m")).faults(new Faults(false, 0, false, 3, null, null)));
        String body = "{\"model\":\"m\",\"prompt\":\"p\"}";

        // A raw socket shows exactly what reached the wire; an HTTP client may discard the bytes it
        // buffered once it sees the truncated stream.
        StringBuilder received = new StringBuilder();
        try (Socket socket = new Socket("127.0.0.1", sim.server.port())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(("POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
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
        List<String> lines = received.toString().lines().filter(l -> l.startsWith("{")).toList();

        assertThat(lines).hasSize(3).noneMatch(l -> l.contains("\"done\":true"));
        assertThat(received.toString()).as("cut: no terminating chunk").doesNotEndWith("0\r\n\r\n");
        assertThat(sim.stats().getLong("droppedConnections")).isEqualTo(1);
    }

    @Test
    void hangsBeforeTheFirstByteUntilTheClientGivesUp() throws Exception {
        start(new SimConfigBuilder("gpu-l", List.of("m")).faults(new Faults(false, 0, true, -1, null, null)));

        HttpRequest request = HttpRequest.newBuilder(sim.uri("/api/generate"))
                .timeout(Duration.ofMillis(300))
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\"p\"}"))
                .build();

        assertThatThrownBy(() -> sim.http.send(request, HttpResponse.BodyHandlers.ofString()))
                .isInstanceOf(HttpTimeoutException.class);
        await().atMost(Duration.ofSeconds(5)).until(() -> sim.stats().getInteger("inFlight") == 0);
    }

    private static JsonObject delta(JsonObject chunk) {
        return chunk.getJsonArray("choices").getJsonObject(0).getJsonObject("delta");
    }

    /** Asserts both objects have the same field names and each field the same JSON type. */
    private static void assertSameFields(JsonObject ours, JsonObject real) {
        assertThat(ours.fieldNames()).containsExactlyInAnyOrderElementsOf(real.fieldNames());
        for (String field : real.fieldNames()) {
            Object a = ours.getValue(field);
            Object b = real.getValue(field);
            assertThat(kind(a)).as(field).isEqualTo(kind(b));
        }
    }

    private static String kind(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Number) {
            return "number";
        }
        return v.getClass().getSimpleName();
    }

    private static String sample(String name) throws IOException {
        try (InputStream in = SimServerIT.class.getResourceAsStream("/samples/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static List<JsonObject> sampleLines(String name) throws IOException {
        return sample(name).lines().filter(l -> !l.isBlank()).map(JsonObject::new).toList();
    }

    private static List<JsonObject> sampleEvents() throws IOException {
        return sample("vllm-chat-completions-stream.sse").lines()
                .filter(l -> l.startsWith("data: {"))
                .map(l -> new JsonObject(l.substring(6)))
                .toList();
    }
}
