package io.heartgate.sim;

import io.heartgate.sim.Requests.Accepted;
import io.heartgate.sim.Requests.Ask;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Speaks the OpenAI-compatible API ({@code /v1/*}) the way vLLM serves it, with vLLM's {@code /health}:
 * SSE streams ending in {@code [DONE]}, whole JSON answers with usage, and vLLM's error objects.
 * A chat with {@code continue_final_message} and a completion whose prompt ends with sim output
 * continue the partial answer they carry ({@link Continuation}).
 */
final class OpenAiApi implements Dialect {

    /** The context length {@code /v1/models} reports for every model, in tokens. */
    static final int MAX_MODEL_LEN = 4096;

    private static final String DONE = "data: [DONE]\n\n";
    private static final Set<String> LAX_TRUE = Set.of("1", "on", "t", "true", "y", "yes");
    private static final Set<String> LAX_FALSE = Set.of("0", "off", "f", "false", "n", "no");

    private final SimEngine engine;
    private final Requests requests;
    private final FaultControl faults;
    private final Clock clock;
    private final String idName;

    /**
     * Creates the adapter; it serves nothing until {@link #mount} adds its routes.
     *
     * @param nodeName the node's name; its letters and digits go into every response id
     * @param clock wall clock for the {@code created} fields
     */
    OpenAiApi(String nodeName, SimEngine engine, Requests requests, FaultControl faults, Clock clock) {
        this.engine = engine;
        this.requests = requests;
        this.faults = faults;
        this.clock = clock;
        this.idName = nodeName.replaceAll("[^A-Za-z0-9]", "");
    }

    /** Adds the OpenAI-compatible routes and {@code /health} to {@code router}. */
    void mount(Router router) {
        router.get("/health").handler(this::health);
        router.get("/v1/models").handler(this::models);
        router.post("/v1/chat/completions").handler(ctx -> generate(ctx, true));
        router.post("/v1/completions").handler(ctx -> generate(ctx, false));
        router.post("/v1/embeddings").handler(this::embeddings);
    }

    private void health(RoutingContext ctx) {
        if (faults.current().failHealth()) {
            Requests.json(ctx, 503, new JsonObject().put("error", "unhealthy").put("error_type", "healthcheck"));
        } else {
            ctx.response().setStatusCode(200).end();
        }
    }

    private void models(RoutingContext ctx) {
        JsonArray data = new JsonArray();
        long created = clock.instant().getEpochSecond();
        for (String model : engine.models()) {
            data.add(new JsonObject()
                    .put("id", model)
                    .put("object", "model")
                    .put("created", created)
                    .put("owned_by", "inference-sim")
                    .put("root", model)
                    .put("parent", null)
                    .put("max_model_len", MAX_MODEL_LEN));
        }
        Requests.json(ctx, 200, new JsonObject().put("object", "list").put("data", data));
    }

    private void generate(RoutingContext ctx, boolean chat) {
        Optional<Accepted> accepted = requests.accept(ctx, chat ? "openai.chat" : "openai.completions", this);
        if (accepted.isEmpty()) {
            return;
        }
        JsonObject body = accepted.get().body();
        boolean stream = laxTrue(body.getValue("stream")); // "stream": 1 streams on vLLM
        JsonObject options = body.getValue("stream_options") instanceof JsonObject so ? so : null;
        if (!stream && options != null && !options.isEmpty()) {
            error(ctx, 400, "Stream options can only be defined when `stream=True`.");
            return;
        }
        // As vLLM reads them: stream_options present means include_usage unless it says otherwise.
        boolean includeUsage = options != null && (!options.containsKey("include_usage")
                || laxTrue(options.getValue("include_usage")));
        boolean continuousUsage = includeUsage && options.containsKey("continuous_usage_stats")
                && laxTrue(options.getValue("continuous_usage_stats"));
        OptionalInt start = chat ? chatStart(ctx, body)
                : OptionalInt.of(Continuation.fromPrompt(body.getValue("prompt")));
        if (start.isEmpty()) {
            return;
        }
        Object maxTokens = body.getValue("max_completion_tokens") != null
                ? body.getValue("max_completion_tokens") : body.getValue("max_tokens");
        Ask ask = new Ask(accepted.get().model(), chat, stream, Requests.promptTokens(body));
        requests.generate(ctx, ask.model(), Requests.maxTokens(maxTokens), start.getAsInt(),
                new Answer(ctx, ask, includeUsage, continuousUsage), this, body);
    }

    /**
     * Returns the first token of a chat's answer: 0 for a new one, or where the final assistant message
     * leaves off when {@code continue_final_message} asks to continue it; empty once it has answered 400.
     *
     * <p>vLLM's rule ({@code vllm/entrypoints/openai/chat_completion/protocol.py}, validator
     * {@code check_generation_prompt}): {@code continue_final_message} defaults to false and
     * {@code add_generation_prompt} to true, and both true is refused, so continuing needs
     * {@code "add_generation_prompt": false} as well. The sim also refuses a final message that is not
     * the assistant's: it holds no partial answer to go on from. Without {@code continue_final_message}
     * a final assistant message is a closed turn and the answer a new one.
     */
    private OptionalInt chatStart(RoutingContext ctx, JsonObject body) {
        if (!laxTrue(body.getValue("continue_final_message"))) {
            return OptionalInt.of(0);
        }
        if (!laxFalse(body.getValue("add_generation_prompt"))) {
            error(ctx, 400, "Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
            return OptionalInt.empty();
        }
        Optional<JsonObject> last = Continuation.lastMessage(body).filter(Continuation::isAssistant);
        if (last.isEmpty()) {
            error(ctx, 400, "continue_final_message is set but the final message is not an assistant message");
            return OptionalInt.empty();
        }
        return OptionalInt.of(Continuation.fromAssistant(last.get()));
    }

    /** Says whether pydantic's lax mode (vLLM's) reads {@code v} as {@code true}: true, 1, "true", "yes" and the like. */
    static boolean laxTrue(Object v) {
        if (v instanceof Boolean b) {
            return b;
        }
        if (v instanceof Number n) {
            return n.doubleValue() == 1;
        }
        return v instanceof String s && LAX_TRUE.contains(s.toLowerCase(Locale.ROOT));
    }

    /** Says whether pydantic's lax mode reads {@code v} as {@code false}: false, 0, "false", "no" and the like. */
    static boolean laxFalse(Object v) {
        if (v instanceof Boolean b) {
            return !b;
        }
        if (v instanceof Number n) {
            return n.doubleValue() == 0;
        }
        return v instanceof String s && LAX_FALSE.contains(s.toLowerCase(Locale.ROOT));
    }

    private void embeddings(RoutingContext ctx) {
        Optional<Accepted> accepted = requests.accept(ctx, "openai.embeddings", this);
        if (accepted.isEmpty()) {
            return;
        }
        String model = accepted.get().model();
        Optional<List<String>> inputs = Requests.inputs(accepted.get().body().getValue("input"));
        if (inputs.isEmpty()) {
            error(ctx, 400, "input must be a string or an array of strings");
            return;
        }
        JsonArray data = new JsonArray();
        for (int i = 0; i < inputs.get().size(); i++) {
            data.add(new JsonObject().put("object", "embedding").put("index", i)
                    .put("embedding", Requests.json(engine.embedding(model, inputs.get().get(i)))));
        }
        int promptTokens = Requests.promptTokens(inputs.get());
        requests.usageReported(promptTokens, 0);
        Requests.json(ctx, 200, new JsonObject()
                .put("object", "list")
                .put("id", id("embd-", engine.nextRequestNumber()))
                .put("created", clock.instant().getEpochSecond())
                .put("model", model)
                .put("data", data)
                .put("usage", new JsonObject().put("prompt_tokens", promptTokens)
                        .put("total_tokens", promptTokens)
                        .put("completion_tokens", 0)));
    }

    @Override
    public void error(RoutingContext ctx, int status, String message) {
        String type = switch (status) {
            case 400, 413 -> "BadRequestError";
            case 404 -> "NotFoundError";
            case 429 -> "RateLimitError";
            case 503 -> "ServiceUnavailableError";
            default -> "InternalServerError";
        };
        Requests.json(ctx, status, new JsonObject().put("error", new JsonObject()
                .put("message", message).put("type", type).put("param", null).put("code", status)));
    }

    @Override
    public void modelNotFound(RoutingContext ctx, String model) {
        Requests.json(ctx, 404, new JsonObject().put("error", new JsonObject()
                .put("message", "The model `" + model + "` does not exist.")
                .put("type", "NotFoundError")
                .put("param", "model")
                .put("code", 404)));
    }

    @Override
    public Optional<String> unnamedModel(RoutingContext ctx) {
        return Optional.of(engine.defaultModel()); // vLLM serves its one model when none is named
    }

    @Override
    public void busy(RoutingContext ctx, int maxQueue) {
        error(ctx, 503, "server busy: " + maxQueue + " requests already waiting");
    }

    private String id(String prefix, long number) {
        return prefix + idName + "-" + Long.toHexString(number);
    }

    private static String event(JsonObject o) {
        return "data: " + o.encode() + "\n\n";
    }

    /**
     * Writes one generation as vLLM does: SSE chunks (a role chunk first for chat), a finish chunk, an
     * optional usage chunk and {@code [DONE]}; or one whole object with usage. With
     * {@code continuous_usage_stats}, every chunk carries the counts so far too.
     */
    private final class Answer implements TokenSink {
        private final RoutingContext ctx;
        private final Ask ask;
        private final boolean includeUsage;
        private final boolean continuousUsage;
        private final ResponseStream out;
        private final long created;

        Answer(RoutingContext ctx, Ask ask, boolean includeUsage, boolean continuousUsage) {
            this.ctx = ctx;
            this.ask = ask;
            this.includeUsage = includeUsage;
            this.continuousUsage = continuousUsage;
            this.out = new ResponseStream(ctx, "text/event-stream");
            this.created = clock.instant().getEpochSecond();
        }

        @Override
        public void token(Generation g, String token) {
            if (!ask.stream()) {
                return;
            }
            if (g.sent() == 1) {
                roleChunk(g);
            }
            out.write(event(chunk(g, ask.chat() ? new JsonObject().put("content", token) : token, false, g.sent())));
        }

        @Override
        public void finish(Generation g) {
            if (ask.stream()) {
                if (g.sent() == 0) {
                    roleChunk(g); // an answer with no token: a continued one that was whole already
                }
                out.write(event(chunk(g, ask.chat() ? new JsonObject().put("content", "") : "", true, g.sent())));
                if (includeUsage) {
                    out.write(event(head(g, chunkObject()).put("choices", new JsonArray()).put("usage", usage(g))));
                }
                out.end(DONE);
                return;
            }
            JsonObject choice = new JsonObject().put("index", 0);
            if (ask.chat()) {
                choice.put("message", new JsonObject().put("role", "assistant").put("content", g.text()));
            } else {
                choice.put("text", g.text());
            }
            choice.put("logprobs", null).put("finish_reason", g.finishReason());
            Requests.json(ctx, 200, head(g, ask.chat() ? "chat.completion" : "text_completion")
                    .put("choices", new JsonArray().add(choice))
                    .put("usage", usage(g)));
        }

        @Override
        public void cut(Generation g) {
            out.cut();
        }

        /** Writes a chat stream's first chunk, which names the role. */
        private void roleChunk(Generation g) {
            if (ask.chat()) {
                out.write(event(chunk(g, new JsonObject().put("role", "assistant").put("content", ""), false, 0)));
            }
        }

        private String chunkObject() {
            return ask.chat() ? "chat.completion.chunk" : "text_completion";
        }

        /**
         * Returns a streamed chunk: {@code content} is the chat delta object or the completion text;
         * with continuous usage, {@code completed} tokens so far are its counts.
         */
        private JsonObject chunk(Generation g, Object content, boolean last, int completed) {
            JsonObject c = head(g, chunkObject()).put("choices", new JsonArray().add(new JsonObject()
                    .put("index", 0)
                    .put(ask.chat() ? "delta" : "text", content)
                    .put("logprobs", null)
                    .put("finish_reason", last ? g.finishReason() : null)));
            if (continuousUsage) {
                c.put("usage", counts(completed)); // running counts: the sim's own tally takes only the last
            }
            return c;
        }

        private JsonObject head(Generation g, String object) {
            return new JsonObject()
                    .put("id", id(ask.chat() ? "chatcmpl-" : "cmpl-", g.number()))
                    .put("object", object)
                    .put("created", created)
                    .put("model", ask.model());
        }

        /** Returns the usage object, in vLLM's field order, and counts what it reports. */
        private JsonObject usage(Generation g) {
            requests.usageReported(ask.promptTokens(), g.sent());
            return counts(g.sent());
        }

        private JsonObject counts(int completed) {
            return new JsonObject()
                    .put("prompt_tokens", ask.promptTokens())
                    .put("total_tokens", ask.promptTokens() + completed)
                    .put("completion_tokens", completed);
        }
    }
}
