package io.heartgate.sim;

import io.heartgate.sim.Requests.Accepted;
import io.heartgate.sim.Requests.Ask;
import io.heartgate.sim.ResponseStore.Stored;
import io.heartgate.sim.ResponsesRequest.Refused;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.util.Optional;
import java.util.random.RandomGenerator;

/**
 * Serves OpenAI's Responses API ({@code /v1/responses}) as vLLM does with
 * {@code VLLM_ENABLE_RESPONSES_API_STORE=1}, for text: the shapes of vllm-project/vllm
 * {@code vllm/frontend/entrypoints/openai/responses/} ({@code serving.py}, {@code protocol.py},
 * {@code streaming_events.py}, {@code api_router.py}). Generations go through the engine as chats do,
 * so slots, the queue, prefill, the prefix cache and the counters are the same.
 *
 * <p>Whole: one response object in vLLM's field order ({@code ResponsesResponse}), {@code status}
 * {@code completed}, or {@code incomplete} with {@code incomplete_details.reason}
 * {@code max_output_tokens} when the limit cut the answer; its output one assistant message
 * ({@code msg_...}) holding one {@code output_text} part (none for an empty answer); {@code usage} with
 * {@code input_tokens_details.cached_tokens}, the prompt's share the prefix cache held.
 *
 * <p>Streamed, as server-sent events with an {@code event:} line naming each {@code data:} object's
 * {@code type} and no {@code [DONE]}, {@code sequence_number} counting from 0: {@code response.created}
 * and {@code response.in_progress} (the response {@code in_progress}, empty output, null usage) as soon
 * as the request is admitted, then with the first token {@code response.output_item.added} and
 * {@code response.content_part.added}, a {@code response.output_text.delta} per token,
 * {@code response.output_text.done}, {@code response.content_part.done},
 * {@code response.output_item.done} and {@code response.completed} with the whole response. As in
 * vLLM, the streamed item's id is a bare hex id and the completed response's message gets another,
 * {@code msg_...}. The hang fault holds back even the first two events: no first byte, as elsewhere.
 *
 * <p>With {@code store} on (the default) the finished response is kept in this node's
 * {@link ResponseStore}; {@code previous_response_id} continues its conversation, so its prompt starts
 * with the previous one's and finds it in the prefix cache. An id this node does not hold is 404
 * {@code invalid_request_error} on {@code response_id}, whatever its prefix (vLLM stopped requiring
 * {@code resp_} in its PR 25428). {@code GET /v1/responses/{id}} answers a stored response;
 * {@code POST /v1/responses/{id}/cancel} refuses, as vLLM refuses a response that did not run in the
 * background. Not modelled: {@code background}, tools, reasoning, logprobs, continuing a final assistant
 * item that is {@code in_progress}.
 */
final class ResponsesApi {

    private final Requests requests;
    private final OpenAiApi openAi;
    private final FaultControl faults;
    private final Clock clock;
    private final RandomGenerator ids;
    private final ResponseStore store;

    /**
     * Creates the adapter; it serves nothing until {@link #mount} adds its routes.
     *
     * @param openAi answers the refusals every {@code /v1/*} endpoint shares, in vLLM's error shape
     * @param clock wall clock for {@code created_at}
     * @param ids draws the random ids vLLM gives responses and items; event loop only
     * @param store this node's stored responses
     */
    ResponsesApi(Requests requests, OpenAiApi openAi, FaultControl faults, Clock clock, RandomGenerator ids,
                 ResponseStore store) {
        this.requests = requests;
        this.openAi = openAi;
        this.faults = faults;
        this.clock = clock;
        this.ids = ids;
        this.store = store;
    }

    /** Adds {@code POST /v1/responses}, {@code GET /v1/responses/:id} and its {@code cancel} to {@code router}. */
    void mount(Router router) {
        router.post("/v1/responses").handler(this::create);
        router.get("/v1/responses/:id").handler(this::retrieve);
        router.post("/v1/responses/:id/cancel").handler(this::cancel);
    }

    private void create(RoutingContext ctx) {
        Optional<Accepted> accepted = requests.accept(ctx, "openai.responses", openAi);
        if (accepted.isEmpty()) {
            return;
        }
        ResponsesRequest request;
        try {
            request = ResponsesRequest.read(accepted.get().body());
        } catch (Refused e) {
            // vLLM's handler for request validation errors: its type is the status phrase
            Requests.json(ctx, 400, error(e.getMessage(), "Bad Request", e.param(), 400));
            return;
        }
        if (OpenAiApi.laxTrue(request.body().getValue("background"))) {
            openAi.error(ctx, 400, "background responses are not simulated");
            return;
        }
        if (request.maxOutputTokens() != null && request.maxOutputTokens() < 1) {
            openAi.error(ctx, 400, "max_tokens must be at least 1, got " + request.maxOutputTokens() + ".");
            return;
        }
        JsonArray history = new JsonArray();
        if (request.previousResponseId() != null) {
            Optional<Stored> previous = store.get(request.previousResponseId());
            if (previous.isEmpty()) {
                notFound(ctx, request.previousResponseId());
                return;
            }
            history = previous.get().history();
        }
        JsonObject chat = request.chat(history);
        Ask ask = new Ask(accepted.get().model(), true, request.stream(), Requests.promptTokens(chat));
        Answer answer = new Answer(ctx, ask, request, chat);
        requests.generate(ctx, ask.model(), request.maxOutputTokens() == null ? Integer.MAX_VALUE
                : request.maxOutputTokens(), 0, answer, openAi, chat);
        if (request.stream() && !ctx.response().ended() && !faults.current().hang()) {
            answer.open(); // vLLM sends these before the engine's first output: in the queue too
        }
    }

    private void retrieve(RoutingContext ctx) {
        requests.count("openai.responses.retrieve");
        String id = ctx.pathParam("id");
        store.get(id).ifPresentOrElse(s -> Requests.json(ctx, 200, s.response()), () -> notFound(ctx, id));
    }

    /** Refuses as vLLM does for a response that did not run in the background, the only kind the sim makes. */
    private void cancel(RoutingContext ctx) {
        requests.count("openai.responses.cancel");
        String id = ctx.pathParam("id");
        if (store.get(id).isEmpty()) {
            notFound(ctx, id);
        } else {
            Requests.json(ctx, 400, error("Cannot cancel a synchronous response.", "invalid_request_error",
                    "response_id", 400));
        }
    }

    /** Answers vLLM's {@code _make_not_found_error}. */
    private static void notFound(RoutingContext ctx, String id) {
        Requests.json(ctx, 404, error("Response with id '" + id + "' not found.", "invalid_request_error",
                "response_id", 404));
    }

    private static JsonObject error(String message, String type, String param, int code) {
        return new JsonObject().put("error", new JsonObject()
                .put("message", message).put("type", type).put("param", param).put("code", code));
    }

    /** Returns 32 random hex digits, as Python's {@code uuid4().hex} that vLLM's ids use. */
    private String hex() {
        return String.format("%016x%016x", ids.nextLong(), ids.nextLong());
    }

    private static String event(JsonObject data) {
        return "event: " + data.getString("type") + "\ndata: " + data.encode() + "\n\n";
    }

    /** Writes one generation as vLLM's Responses API does (see the class comment), and stores it. */
    private final class Answer implements TokenSink {
        private final RoutingContext ctx;
        private final Ask ask;
        private final ResponsesRequest request;
        private final JsonObject chat;
        private final ResponseStream out;
        private final String id = "resp_" + hex();
        private final long createdAt = clock.instant().getEpochSecond();
        private String itemId;
        private int sequence;
        private boolean opened;

        Answer(RoutingContext ctx, Ask ask, ResponsesRequest request, JsonObject chat) {
            this.ctx = ctx;
            this.ask = ask;
            this.request = request;
            this.chat = chat;
            this.out = new ResponseStream(ctx, "text/event-stream");
        }

        /** Writes {@code response.created} and {@code response.in_progress}, once. */
        void open() {
            if (opened) {
                return;
            }
            opened = true;
            JsonObject initial = response("in_progress", new JsonArray(), null);
            out.write(event(numbered(new JsonObject().put("response", initial), "response.created"))
                    + event(numbered(new JsonObject().put("response", initial), "response.in_progress")));
        }

        @Override
        public void token(Generation g, String token) {
            if (!ask.stream()) {
                return;
            }
            open();
            StringBuilder events = new StringBuilder();
            if (g.sent() == 1) {
                itemId = hex();
                events.append(event(numbered(new JsonObject().put("item", message(itemId, new JsonArray(),
                        "in_progress")).put("output_index", 0), "response.output_item.added")));
                events.append(event(numbered(part(text("", new JsonArray())), "response.content_part.added")));
            }
            events.append(event(numbered(new JsonObject().put("content_index", 0).put("delta", token)
                    .put("item_id", itemId).put("logprobs", new JsonArray()).put("output_index", 0),
                    "response.output_text.delta")));
            out.write(events.toString());
        }

        @Override
        public void finish(Generation g) {
            requests.usageReported(ask.promptTokens(), g.sent());
            String answer = g.text();
            JsonArray content = answer.isEmpty() ? new JsonArray() : new JsonArray().add(text(answer, null));
            boolean cut = g.finishReason().equals("length");
            JsonObject response = response(cut ? "incomplete" : "completed",
                    new JsonArray().add(message("msg_" + hex(), content, "completed")), usage(g));
            if (request.store()) {
                store.put(id, new Stored(response, ResponsesRequest.history(chat, answer)));
            }
            if (!ask.stream()) {
                Requests.json(ctx, 200, response);
                return;
            }
            open();
            StringBuilder events = new StringBuilder();
            if (g.sent() > 0) {
                events.append(event(new JsonObject().put("content_index", 0).put("item_id", itemId)
                        .put("logprobs", new JsonArray()).put("output_index", 0).put("sequence_number", sequence++)
                        .put("text", answer).put("type", "response.output_text.done")));
                events.append(event(numbered(part(text(answer, null)), "response.content_part.done")));
                events.append(event(numbered(new JsonObject().put("item", message(itemId,
                        new JsonArray().add(text(answer, null)), "completed").put("summary", new JsonArray()))
                        .put("output_index", 0), "response.output_item.done")));
            }
            events.append(event(numbered(new JsonObject().put("response", response), "response.completed")));
            out.end(events.toString());
        }

        @Override
        public void cut(Generation g) {
            out.cut();
        }

        /** Adds an event's {@code sequence_number}, the next, and its {@code type}, last as vLLM's models order them. */
        private JsonObject numbered(JsonObject event, String type) {
            return event.put("sequence_number", sequence++).put("type", type);
        }

        /** Returns the fields of a content part event about {@code part}, but its number and type. */
        private JsonObject part(JsonObject part) {
            return new JsonObject().put("content_index", 0).put("item_id", itemId).put("output_index", 0)
                    .put("part", part);
        }

        /**
         * Returns a response object in vLLM's field order ({@code ResponsesResponse.from_request}), with
         * what the request set echoed and vLLM's defaults for what it did not.
         */
        private JsonObject response(String status, JsonArray output, JsonObject usage) {
            JsonObject body = request.body();
            JsonArray tools = body.getValue("tools") instanceof JsonArray a ? a : new JsonArray();
            int maxTokens = Math.max(0, OpenAiApi.MAX_MODEL_LEN - ask.promptTokens());
            if (request.maxOutputTokens() != null) {
                maxTokens = Math.min(request.maxOutputTokens(), maxTokens);
            }
            return new JsonObject()
                    .put("id", id)
                    .put("created_at", createdAt)
                    .put("incomplete_details", status.equals("incomplete")
                            ? new JsonObject().put("reason", "max_output_tokens") : null)
                    .put("instructions", request.instructions())
                    .put("metadata", body.getValue("metadata"))
                    .put("model", ask.model())
                    .put("object", "response")
                    .put("output", output)
                    .put("parallel_tool_calls", or(body, "parallel_tool_calls", true))
                    .put("temperature", number(body, "temperature", 1.0))
                    // vLLM's check_tool_usage makes "auto" (and "none") "none" when no tool is given
                    .put("tool_choice", tools.isEmpty() ? "none" : or(body, "tool_choice", "auto"))
                    .put("tools", tools)
                    .put("top_p", number(body, "top_p", 1.0))
                    .put("background", false)
                    .put("max_output_tokens", maxTokens)
                    .put("max_tool_calls", body.getValue("max_tool_calls"))
                    .put("previous_response_id", request.previousResponseId())
                    .put("prompt", null)
                    .put("reasoning", body.getValue("reasoning"))
                    .put("service_tier", or(body, "service_tier", "auto"))
                    .put("status", status)
                    .put("text", body.getValue("text"))
                    .put("top_logprobs", null)
                    .put("truncation", or(body, "truncation", "disabled"))
                    .put("usage", usage)
                    .put("user", body.getValue("user"))
                    .put("presence_penalty", number(body, "presence_penalty", 0.0))
                    .put("frequency_penalty", number(body, "frequency_penalty", 0.0))
                    .put("kv_transfer_params", null)
                    .put("ec_transfer_params", null)
                    .put("input_messages", null)
                    .put("output_messages", null);
        }

        /**
         * Returns vLLM's usage object; {@code cached_tokens} is the share of the rendered prompt the prefix
         * cache held, in the usage's own rough tokens, rounded down. The per-turn lists stay empty, as
         * vLLM leaves them without tools.
         */
        private JsonObject usage(Generation g) {
            int cached = (int) (ask.promptTokens() * g.cachedPromptShare());
            return new JsonObject()
                    .put("input_tokens", ask.promptTokens())
                    .put("input_tokens_details", new JsonObject().put("cached_tokens", cached)
                            .put("input_tokens_per_turn", new JsonArray()).put("cached_tokens_per_turn", new JsonArray()))
                    .put("output_tokens", g.sent())
                    .put("output_tokens_details", new JsonObject().put("reasoning_tokens", 0)
                            .put("tool_output_tokens", 0).put("output_tokens_per_turn", new JsonArray())
                            .put("tool_output_tokens_per_turn", new JsonArray()))
                    .put("total_tokens", ask.promptTokens() + g.sent());
        }
    }

    /** Returns {@code body}'s {@code field}, or {@code fallback} when it is missing or null. */
    private static Object or(JsonObject body, String field, Object fallback) {
        Object value = body.getValue(field);
        return value == null ? fallback : value;
    }

    /** Returns {@code body}'s number {@code field} as the float vLLM echoes, or {@code fallback} when it is not a number. */
    private static double number(JsonObject body, String field, double fallback) {
        return body.getValue(field) instanceof Number n ? n.doubleValue() : fallback;
    }

    /** Returns an assistant output message in the order of openai's {@code ResponseOutputMessage}. */
    private static JsonObject message(String id, JsonArray content, String status) {
        return new JsonObject().put("id", id).put("content", content).put("role", "assistant")
                .put("status", status).put("type", "message").put("phase", null);
    }

    /** Returns an {@code output_text} part; {@code logprobs} is an empty list or, where vLLM leaves it unset, null. */
    private static JsonObject text(String text, JsonArray logprobs) {
        return new JsonObject().put("annotations", new JsonArray()).put("text", text).put("type", "output_text")
                .put("logprobs", logprobs);
    }
}
