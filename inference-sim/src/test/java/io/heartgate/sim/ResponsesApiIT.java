package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** OpenAI's Responses API as vLLM serves it with its response store on, on real servers over loopback. */
class ResponsesApiIT {

    /** The fields of vLLM's {@code ResponsesResponse}, in its order. */
    private static final List<String> RESPONSE_FIELDS = List.of("id", "created_at", "incomplete_details",
            "instructions", "metadata", "model", "object", "output", "parallel_tool_calls", "temperature",
            "tool_choice", "tools", "top_p", "background", "max_output_tokens", "max_tool_calls",
            "previous_response_id", "prompt", "reasoning", "service_tier", "status", "text", "top_logprobs",
            "truncation", "usage", "user", "presence_penalty", "frequency_penalty", "kv_transfer_params",
            "ec_transfer_params", "input_messages", "output_messages");
    private static final String INSTRUCTIONS = "You answer in one short sentence, politely. ".repeat(8);

    private final List<SimHarness> sims = new ArrayList<>();

    private SimHarness start(SimConfigBuilder config) throws Exception {
        SimHarness sim = new SimHarness(config.build());
        sims.add(sim);
        return sim;
    }

    @AfterEach
    void stop() throws Exception {
        for (SimHarness sim : sims) {
            sim.close();
        }
    }

    @Test
    void answersWholeInVllmsFieldsAndOrder() throws Exception {
        SimHarness sim = start(new SimConfigBuilder("gpu-a", List.of("m", "n")));

        HttpResponse<String> cut = sim.post("/v1/responses", new JsonObject().put("model", "n")
                .put("input", "hello there").put("max_output_tokens", 5).encode());
        JsonObject whole = new JsonObject(sim.post("/v1/responses", new JsonObject().put("input", new JsonArray()
                .add(new JsonObject().put("role", "user").put("content", "hi again"))).put("instructions", "be brief")
                .put("temperature", 0).put("metadata", new JsonObject().put("k", "v")).encode()).body());

        assertThat(cut.statusCode()).isEqualTo(200);
        assertThat(cut.headers().firstValue("content-type")).hasValue("application/json; charset=utf-8");
        JsonObject answer = new JsonObject(cut.body());
        assertThat(answer.fieldNames()).containsExactlyElementsOf(RESPONSE_FIELDS);
        assertThat(answer.getString("id")).matches("resp_[0-9a-f]{32}");
        JsonObject message = answer.getJsonArray("output").getJsonObject(0);
        assertThat(message.getString("id")).matches("msg_[0-9a-f]{32}");
        assertThat(answer.getLong("created_at")).isPositive();
        assertThat(answer.copy().put("id", "x").put("created_at", 0).put("output", new JsonArray())).isEqualTo(
                new JsonObject().put("id", "x").put("created_at", 0)
                        .put("incomplete_details", new JsonObject().put("reason", "max_output_tokens"))
                        .put("instructions", null).put("metadata", null).put("model", "n").put("object", "response")
                        .put("output", new JsonArray()).put("parallel_tool_calls", true).put("temperature", 1.0)
                        .put("tool_choice", "none").put("tools", new JsonArray()).put("top_p", 1.0)
                        .put("background", false).put("max_output_tokens", 5).put("max_tool_calls", null)
                        .put("previous_response_id", null).put("prompt", null).put("reasoning", null)
                        .put("service_tier", "auto").put("status", "incomplete").put("text", null)
                        .put("top_logprobs", null).put("truncation", "disabled").put("usage", usage(2, 0, 5))
                        .put("user", null).put("presence_penalty", 0.0).put("frequency_penalty", 0.0)
                        .put("kv_transfer_params", null).put("ec_transfer_params", null)
                        .put("input_messages", null).put("output_messages", null));
        assertThat(message.copy().put("id", "x")).isEqualTo(new JsonObject().put("id", "x")
                .put("content", new JsonArray().add(text("[gpu-a] the GPU streams tokens", null)))
                .put("role", "assistant").put("status", "completed").put("type", "message").put("phase", null));

        assertThat(whole.getString("status")).isEqualTo("completed");
        assertThat(whole.getValue("incomplete_details")).isNull();
        assertThat(whole.getString("model")).as("the first model when none is named").isEqualTo("m");
        assertThat(whole.getString("instructions")).isEqualTo("be brief");
        assertThat(whole.getJsonObject("metadata")).isEqualTo(new JsonObject().put("k", "v"));
        assertThat(whole.getValue("temperature")).isEqualTo(0.0);
        assertThat(whole.getInteger("max_output_tokens")).as("max_model_len less the prompt").isEqualTo(4096 - 4);
        assertThat(whole.getJsonObject("usage")).as("instructions count in the prompt").isEqualTo(usage(4, 0, 8));
        assertThat(sim.stats().getJsonObject("requests").getLong("openai.responses")).isEqualTo(2);
        assertThat(sim.stats().getLong("completed")).isEqualTo(2);
        assertThat(sim.stats().getJsonObject("usage")).isEqualTo(new JsonObject().put("promptTokens", 6)
                .put("completionTokens", 13));
        assertThat(sim.get("/metrics").body()).contains("sim_requests_total{endpoint=\"openai.responses\"} 2\n");
    }

    @Test
    void streamsVllmsEventSequenceNumberedFromZero() throws Exception {
        SimHarness sim = start(new SimConfigBuilder("gpu-s", List.of("m")));

        HttpResponse<String> r = sim.post("/v1/responses", new JsonObject().put("model", "m").put("input", "hello there")
                .put("stream", true).put("max_output_tokens", 3).encode());

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type")).hasValue("text/event-stream");
        List<Event> events = events(r.body());
        assertThat(events).extracting(Event::name).containsExactly("response.created", "response.in_progress",
                "response.output_item.added", "response.content_part.added", "response.output_text.delta",
                "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
                "response.content_part.done", "response.output_item.done", "response.completed");
        assertThat(events).allMatch(e -> e.name().equals(e.data().getString("type")));
        assertThat(events).extracting(e -> e.data().getInteger("sequence_number"))
                .containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
        assertThat(r.body()).doesNotContain("[DONE]").endsWith("\n\n");

        JsonObject created = events.get(0).data().getJsonObject("response");
        assertThat(created.fieldNames()).containsExactlyElementsOf(RESPONSE_FIELDS);
        assertThat(created.getString("status")).isEqualTo("in_progress");
        assertThat(created.getJsonArray("output")).isEmpty();
        assertThat(created.getValue("usage")).isNull();
        assertThat(events.get(1).data().getJsonObject("response")).isEqualTo(created);

        String item = events.get(2).data().getJsonObject("item").getString("id");
        assertThat(item).as("vLLM's streamed item id is a bare uuid").matches("[0-9a-f]{32}");
        assertThat(events.get(2).data()).isEqualTo(new JsonObject().put("item", new JsonObject().put("id", item)
                .put("content", new JsonArray()).put("role", "assistant").put("status", "in_progress")
                .put("type", "message").put("phase", null)).put("output_index", 0).put("sequence_number", 2)
                .put("type", "response.output_item.added"));
        assertThat(events.get(3).data()).isEqualTo(new JsonObject().put("content_index", 0).put("item_id", item)
                .put("output_index", 0).put("part", text("", new JsonArray())).put("sequence_number", 3)
                .put("type", "response.content_part.added"));
        assertThat(events.get(4).data()).isEqualTo(new JsonObject().put("content_index", 0).put("delta", "[gpu-s]")
                .put("item_id", item).put("logprobs", new JsonArray()).put("output_index", 0)
                .put("sequence_number", 4).put("type", "response.output_text.delta"));
        assertThat(events.subList(4, 7)).extracting(e -> e.data().getString("delta"))
                .containsExactly("[gpu-s]", " the", " GPU");
        assertThat(events.get(7).data()).isEqualTo(new JsonObject().put("content_index", 0).put("item_id", item)
                .put("logprobs", new JsonArray()).put("output_index", 0).put("sequence_number", 7)
                .put("text", "[gpu-s] the GPU").put("type", "response.output_text.done"));
        assertThat(events.get(8).data()).isEqualTo(new JsonObject().put("content_index", 0).put("item_id", item)
                .put("output_index", 0).put("part", text("[gpu-s] the GPU", null)).put("sequence_number", 8)
                .put("type", "response.content_part.done"));
        assertThat(events.get(9).data().getJsonObject("item")).isEqualTo(new JsonObject().put("id", item)
                .put("content", new JsonArray().add(text("[gpu-s] the GPU", null))).put("role", "assistant")
                .put("status", "completed").put("type", "message").put("phase", null).put("summary", new JsonArray()));

        JsonObject completed = events.get(10).data().getJsonObject("response");
        assertThat(completed.getString("id")).isEqualTo(created.getString("id"));
        assertThat(completed.getString("status")).isEqualTo("incomplete");
        assertThat(completed.getJsonObject("usage")).isEqualTo(usage(2, 0, 3));
        JsonObject message = completed.getJsonArray("output").getJsonObject(0);
        assertThat(message.getString("id")).as("a new id, as vLLM rebuilds the output").matches("msg_[0-9a-f]{32}");
        assertThat(message.getJsonArray("content")).isEqualTo(new JsonArray().add(text("[gpu-s] the GPU", null)));
        assertThat(sim.get("/v1/responses/" + completed.getString("id")).body()).as("stored as completed")
                .isEqualTo(completed.encode());
    }

    @Test
    void aStreamGetsItsFirstEventsWhileItWaitsForASlot() throws Exception {
        SimHarness sim = start(new SimConfigBuilder("gpu-q", List.of("m")).concurrency(1, 8)
                .timing(1000, Duration.ofMillis(50), Duration.ofMillis(1)));
        CompletableFuture<HttpResponse<InputStream>> holder = sim.http.sendAsync(sim.postRequest("/v1/responses",
                "{\"input\":\"hold the slot\"}"), HttpResponse.BodyHandlers.ofInputStream());
        await().atMost(Duration.ofSeconds(10)).until(() -> sim.stats().getInteger("inFlight") == 1);

        HttpResponse<InputStream> queued = sim.http.send(sim.postRequest("/v1/responses",
                "{\"input\":\"wait\",\"stream\":true}"), HttpResponse.BodyHandlers.ofInputStream());

        try (BufferedReader lines = new BufferedReader(new InputStreamReader(queued.body(), StandardCharsets.UTF_8))) {
            assertThat(lines.readLine()).isEqualTo("event: response.created");
            lines.readLine();
            lines.readLine();
            assertThat(lines.readLine()).isEqualTo("event: response.in_progress");
            assertThat(sim.stats().getInteger("queued")).as("still waiting for the slot").isEqualTo(1);
        }
        holder.cancel(true);
    }

    @Test
    void aContinuationFindsThePreviousConversationInThePrefixCache() throws Exception {
        SimHarness sim = start(new SimConfigBuilder("gpu-k", List.of("m")).prefill(1000, 16, Duration.ZERO));

        JsonObject first = new JsonObject(sim.post("/v1/responses", new JsonObject().put("input", "hello")
                .put("instructions", INSTRUCTIONS).encode()).body());
        long hitsBefore = counter(sim.get("/metrics").body(), "vllm:prefix_cache_hits_total");
        HttpResponse<String> next = sim.post("/v1/responses", new JsonObject().put("input", "and then?")
                .put("instructions", INSTRUCTIONS).put("previous_response_id", first.getString("id")).encode());

        assertThat(first.getJsonObject("usage").getJsonObject("input_tokens_details").getInteger("cached_tokens"))
                .isZero();
        assertThat(next.statusCode()).isEqualTo(200);
        JsonObject second = new JsonObject(next.body());
        assertThat(second.getString("previous_response_id")).isEqualTo(first.getString("id"));
        JsonObject usage = second.getJsonObject("usage");
        // the first prompt (56 words of instructions, "hello") and its 8-token answer, then "and then?"
        int inputTokens = 56 + 1 + 8 + 2;
        assertThat(usage.getInteger("input_tokens")).isEqualTo(inputTokens);
        String firstTurn = "<system>\n" + INSTRUCTIONS + "\n<user>\nhello\n<assistant>\n"
                + "[gpu-k] the GPU streams tokens quickly while the\n";
        int cachedChars = firstTurn.length() / 16 * 16; // the whole first turn, in whole blocks
        long hits = counter(sim.get("/metrics").body(), "vllm:prefix_cache_hits_total") - hitsBefore;
        assertThat(hits).isEqualTo(cachedChars / 4);
        assertThat(usage.getJsonObject("input_tokens_details").getInteger("cached_tokens"))
                .as("the prompt's cached share of its input tokens")
                .isEqualTo((int) (inputTokens * ((double) cachedChars / (firstTurn + "<user>\nand then?\n").length())))
                .isBetween(56, 65);
        assertThat(sim.get("/v1/responses/" + second.getString("id")).body()).isEqualTo(second.encode());
    }

    @Test
    void anotherSimProcessAnswers404ForAnIdItDidNotCreate() throws Exception {
        SimHarness a = start(new SimConfigBuilder("gpu-a", List.of("m")));
        SimHarness b = start(new SimConfigBuilder("gpu-a", List.of("m"))); // same name: ids still differ
        String id = new JsonObject(a.post("/v1/responses", "{\"input\":\"hello\"}").body()).getString("id");
        new JsonObject(b.post("/v1/responses", "{\"input\":\"hello\"}").body());

        HttpResponse<String> elsewhere = b.post("/v1/responses", new JsonObject().put("input", "and then?")
                .put("previous_response_id", id).encode());
        HttpResponse<String> retrieved = b.get("/v1/responses/" + id);

        assertThat(elsewhere.statusCode()).isEqualTo(404);
        assertThat(elsewhere.headers().firstValue("content-type")).hasValue("application/json; charset=utf-8");
        assertThat(new JsonObject(elsewhere.body())).isEqualTo(notFound(id));
        assertThat(retrieved.statusCode()).isEqualTo(404);
        assertThat(new JsonObject(retrieved.body())).isEqualTo(notFound(id));
        assertThat(a.post("/v1/responses", new JsonObject().put("input", "and then?").put("previous_response_id", id)
                .encode()).statusCode()).as("its own node continues it").isEqualTo(200);
        assertThat(b.stats().getLong("completed")).as("nothing generated for the refused one").isEqualTo(1);
    }

    @Test
    void aMalformedIdIs400AndAnUnknownOneIs404WhateverItsPrefix() throws Exception {
        SimHarness sim = start(new SimConfigBuilder("gpu-b", List.of("m")));

        HttpResponse<String> number = sim.post("/v1/responses", "{\"input\":\"x\",\"previous_response_id\":7}");
        HttpResponse<String> noPrefix = sim.post("/v1/responses", "{\"input\":\"x\",\"previous_response_id\":\"abc\"}");
        HttpResponse<String> noInput = sim.post("/v1/responses", "{\"model\":\"m\"}");

        assertThat(number.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(number.body())).isEqualTo(new JsonObject().put("error", new JsonObject()
                .put("message", "1 validation error:\n  {'type': 'string_type', 'loc': ('body', 'previous_response_id'), "
                        + "'msg': 'Input should be a valid string'}")
                .put("type", "Bad Request").put("param", "body.previous_response_id").put("code", 400)));
        assertThat(noPrefix.statusCode()).as("vLLM no longer requires resp_").isEqualTo(404);
        assertThat(new JsonObject(noPrefix.body())).isEqualTo(notFound("abc"));
        assertThat(noInput.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(noInput.body()).getJsonObject("error").getString("param")).isEqualTo("body.input");
        assertThat(sim.stats().getLong("completed")).isZero();
    }

    @Test
    void aResponseWithStoreFalseIsNeitherRetrievedNorContinued() throws Exception {
        SimHarness sim = start(new SimConfigBuilder("gpu-f", List.of("m")));

        JsonObject unstored = new JsonObject(sim.post("/v1/responses", "{\"input\":\"hello\",\"store\":false}").body());
        String id = unstored.getString("id");
        String streamed = sim.post("/v1/responses", "{\"input\":\"hello\",\"store\":false,\"stream\":true}").body();
        String streamedId = events(streamed).get(0).data().getJsonObject("response").getString("id");

        assertThat(unstored.getString("status")).isEqualTo("completed");
        assertThat(sim.get("/v1/responses/" + id).statusCode()).isEqualTo(404);
        assertThat(sim.get("/v1/responses/" + streamedId).statusCode()).isEqualTo(404);
        HttpResponse<String> continued = sim.post("/v1/responses", new JsonObject().put("input", "and then?")
                .put("previous_response_id", id).encode());
        assertThat(continued.statusCode()).isEqualTo(404);
        assertThat(new JsonObject(continued.body())).isEqualTo(notFound(id));
    }

    @Test
    void cancellingAStoredResponseIsRefusedAsVllmRefusesASynchronousOne() throws Exception {
        SimHarness sim = start(new SimConfigBuilder("gpu-c", List.of("m")).apiKey("node-secret"));
        String id = new JsonObject(sim.http.send(keyed(sim, "/v1/responses", "{\"input\":\"hello\"}"),
                HttpResponse.BodyHandlers.ofString()).body()).getString("id");

        HttpResponse<String> cancel = sim.http.send(keyed(sim, "/v1/responses/" + id + "/cancel", "{}"),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> unknown = sim.http.send(keyed(sim, "/v1/responses/resp_x/cancel", "{}"),
                HttpResponse.BodyHandlers.ofString());

        assertThat(cancel.statusCode()).isEqualTo(400);
        assertThat(new JsonObject(cancel.body())).isEqualTo(new JsonObject().put("error", new JsonObject()
                .put("message", "Cannot cancel a synchronous response.").put("type", "invalid_request_error")
                .put("param", "response_id").put("code", 400)));
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(sim.get("/v1/responses/" + id).statusCode()).as("stored answers need the key").isEqualTo(401);
        assertThat(sim.http.send(HttpRequest.newBuilder(sim.uri("/v1/responses/" + id))
                .header("authorization", "Bearer node-secret").build(), HttpResponse.BodyHandlers.ofString())
                .statusCode()).isEqualTo(200);
    }

    private static HttpRequest keyed(SimHarness sim, String path, String json) {
        return HttpRequest.newBuilder(sim.uri(path)).header("authorization", "Bearer node-secret")
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build();
    }

    private static JsonObject usage(int input, int cached, int output) {
        return new JsonObject()
                .put("input_tokens", input)
                .put("input_tokens_details", new JsonObject().put("cached_tokens", cached)
                        .put("input_tokens_per_turn", new JsonArray()).put("cached_tokens_per_turn", new JsonArray()))
                .put("output_tokens", output)
                .put("output_tokens_details", new JsonObject().put("reasoning_tokens", 0).put("tool_output_tokens", 0)
                        .put("output_tokens_per_turn", new JsonArray()).put("tool_output_tokens_per_turn", new JsonArray()))
                .put("total_tokens", input + output);
    }

    private static JsonObject text(String text, JsonArray logprobs) {
        return new JsonObject().put("annotations", new JsonArray()).put("text", text).put("type", "output_text")
                .put("logprobs", logprobs);
    }

    private static JsonObject notFound(String id) {
        return new JsonObject().put("error", new JsonObject().put("message", "Response with id '" + id + "' not found.")
                .put("type", "invalid_request_error").put("param", "response_id").put("code", 404));
    }

    private static long counter(String metrics, String name) {
        for (String line : metrics.split("\n")) {
            if (line.startsWith(name + "{")) {
                return (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        throw new AssertionError("no " + name);
    }

    /** One server-sent event: its {@code event:} name and its {@code data:} object. */
    private record Event(String name, JsonObject data) {
    }

    /** Parses a whole SSE body, failing on anything that is not an {@code event:} line then a {@code data:} line. */
    private static List<Event> events(String body) {
        List<Event> events = new ArrayList<>();
        for (String block : body.split("\n\n")) {
            String[] lines = block.split("\n");
            assertThat(lines).hasSize(2);
            assertThat(lines[0]).startsWith("event: ");
            assertThat(lines[1]).startsWith("data: ");
            events.add(new Event(lines[0].substring(7), new JsonObject(lines[1].substring(6))));
        }
        return events;
    }
}
