package io.heartgate.sim;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one simulated inference node: Ollama ({@code /api/*}) and OpenAI-compatible ({@code /v1/*})
 * endpoints, vLLM/TGI-style health and metrics, and the simulator's own fault and stats endpoints.
 *
 * <p>All request state lives on this verticle's single event loop, so the slot count and the wait
 * queue need no locks. Generation is a chain of timers: a client that disconnects cancels the chain
 * at once, which is how a real server stops spending GPU time on a stream nobody reads.
 */
public final class SimServer extends VerticleBase {

    private static final Logger log = LoggerFactory.getLogger(SimServer.class);
    static final String OLLAMA_VERSION = "0.11.6";
    private static final String OLLAMA_BUSY = "server busy, please try again.  maximum pending requests exceeded";
    private static final long BODY_LIMIT_BYTES = 16L * 1024 * 1024;

    private final SimConfig config;
    private final Clock clock;
    private final LongSupplier nanoTicker;
    private final TextSource text;
    private final SimStats stats = new SimStats();
    private final ArrayDeque<Job> waiting = new ArrayDeque<>();
    private volatile Faults faults;
    private volatile int running;
    private volatile int actualPort = -1;
    private long idCounter;
    private HttpServer server;

    /**
     * Creates the server; nothing listens until it is deployed.
     *
     * @param clock wall clock for {@code created_at} fields
     * @param nanoTicker monotonic nanoseconds for the duration fields
     */
    public SimServer(SimConfig config, Clock clock, LongSupplier nanoTicker) {
        this.config = config;
        this.clock = clock;
        this.nanoTicker = nanoTicker;
        this.text = new TextSource(config.name());
        this.faults = config.faults();
    }

    /** Returns the port actually listened on, or -1 before the server listens. */
    public int port() {
        return actualPort;
    }

    /** Returns the faults in force now. */
    public Faults faults() {
        return faults;
    }

    /** Replaces the faults in force; safe from any thread. */
    public void setFaults(Faults newFaults) {
        this.faults = newFaults;
    }

    @Override
    public Future<?> start() {
        Router router = Router.router(vertx);
        router.route().handler(BodyHandler.create(false).setBodyLimit(BODY_LIMIT_BYTES));

        router.get("/").handler(ctx -> ctx.response().putHeader("content-type", "text/plain; charset=utf-8")
                .end("Ollama is running"));
        router.get("/health").handler(this::health);
        router.get("/metrics").handler(this::metrics);

        router.get("/api/version").handler(this::ollamaVersion);
        router.get("/api/tags").handler(ctx -> json(ctx, 200, ollamaModels(false)));
        router.get("/api/ps").handler(ctx -> json(ctx, 200, ollamaModels(true)));
        router.post("/api/generate").handler(ctx -> inference(ctx, Api.OLLAMA_GENERATE));
        router.post("/api/chat").handler(ctx -> inference(ctx, Api.OLLAMA_CHAT));
        router.post("/api/embed").handler(ctx -> embeddings(ctx, Api.OLLAMA_EMBED));
        router.post("/api/embeddings").handler(ctx -> embeddings(ctx, Api.OLLAMA_EMBEDDINGS_LEGACY));

        router.get("/v1/models").handler(this::openAiModels);
        router.post("/v1/chat/completions").handler(ctx -> inference(ctx, Api.OPENAI_CHAT));
        router.post("/v1/completions").handler(ctx -> inference(ctx, Api.OPENAI_COMPLETION));
        router.post("/v1/embeddings").handler(ctx -> embeddings(ctx, Api.OPENAI_EMBEDDINGS));

        router.get("/sim/faults").handler(ctx -> json(ctx, 200, faults.toJson()));
        router.post("/sim/faults").handler(this::postFaults);
        router.delete("/sim/faults").handler(ctx -> {
            faults = Faults.NONE;
            log.info("Node {} cleared all faults", config.name());
            json(ctx, 200, faults.toJson());
        });
        router.get("/sim/stats").handler(ctx -> json(ctx, 200, stats.toJson(config.name(), running, waiting.size())));

        router.errorHandler(413, ctx -> error(ctx, Api.of(ctx.request().path()), 413, "request body too large"));
        router.errorHandler(500, ctx -> {
            log.warn("Node {} failed a request to {}", config.name(), ctx.request().path(), ctx.failure());
            if (!ctx.response().headWritten()) {
                error(ctx, Api.of(ctx.request().path()), 500, "internal error in the simulator");
            }
        });

        server = vertx.createHttpServer(new HttpServerOptions().setIdleTimeout(0));
        return server.requestHandler(router).listen(config.port(), config.bindHost()).onSuccess(s -> {
            actualPort = s.actualPort();
            // The exact line scripts and tests wait for (see CONTRACT.md).
            log.info("inference-sim listening on {}:{}", config.bindHost(), s.actualPort());
        });
    }

    @Override
    public Future<?> stop() {
        return server == null ? Future.succeededFuture() : server.close();
    }

    private void health(RoutingContext ctx) {
        if (faults.failHealth()) {
            json(ctx, 503, new JsonObject().put("error", "unhealthy").put("error_type", "healthcheck"));
        } else {
            ctx.response().setStatusCode(200).end();
        }
    }

    private void ollamaVersion(RoutingContext ctx) {
        if (faults.failHealth()) {
            json(ctx, 503, new JsonObject().put("error", "unhealthy"));
        } else {
            json(ctx, 200, new JsonObject().put("version", OLLAMA_VERSION));
        }
    }

    private JsonObject ollamaModels(boolean loaded) {
        JsonArray models = new JsonArray();
        for (String model : config.models()) {
            JsonObject m = new JsonObject()
                    .put("name", model)
                    .put("model", model)
                    .put("size", 4_661_224_676L);
            if (!loaded) {
                m.put("modified_at", "2026-11-01T12:00:00Z");
            }
            m.put("digest", digest(model))
                    .put("details", new JsonObject()
                            .put("parent_model", "")
                            .put("format", "gguf")
                            .put("family", "llama")
                            .put("families", new JsonArray().add("llama"))
                            .put("parameter_size", "8.0B")
                            .put("quantization_level", "Q4_0"));
            if (loaded) {
                m.put("expires_at", clock.instant().plusSeconds(300).toString())
                        .put("size_vram", 4_661_224_676L)
                        .put("context_length", 4096);
            }
            models.add(m);
        }
        return new JsonObject().put("models", models);
    }

    private void openAiModels(RoutingContext ctx) {
        JsonArray data = new JsonArray();
        long created = clock.instant().getEpochSecond();
        for (String model : config.models()) {
            data.add(new JsonObject()
                    .put("id", model)
                    .put("object", "model")
                    .put("created", created)
                    .put("owned_by", "inference-sim")
                    .put("root", model)
                    .put("parent", null)
                    .put("max_model_len", 4096));
        }
        json(ctx, 200, new JsonObject().put("object", "list").put("data", data));
    }

    private void metrics(RoutingContext ctx) {
        // Written by hand rather than through a metrics library: the point is to reproduce vLLM's
        // exact names ("vllm:" prefix, model_name and engine labels), which libraries rename.
        String labels = "{engine=\"0\",model_name=\"" + escape(config.models().get(0)) + "\"}";
        StringBuilder sb = new StringBuilder(2048);
        gauge(sb, "vllm:num_requests_running", "Number of requests in model execution batches.", labels, running);
        gauge(sb, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels, waiting.size());
        gauge(sb, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels,
                (double) running / config.maxConcurrency());
        sb.append("# HELP sim_requests_total Requests received, by endpoint.\n");
        sb.append("# TYPE sim_requests_total counter\n");
        stats.requests().forEach((endpoint, n) ->
                sb.append("sim_requests_total{endpoint=\"").append(escape(endpoint)).append("\"} ")
                        .append(n).append('\n'));
        counter(sb, "sim_cancelled_streams_total", "Generations stopped because the client went away.",
                stats.cancelledStreams.sum());
        counter(sb, "sim_dropped_connections_total", "Connections cut by the dropAfterTokens fault.",
                stats.droppedConnections.sum());
        counter(sb, "sim_tokens_sent_total", "Tokens generated and sent.", stats.tokensSent.sum());
        counter(sb, "sim_completed_requests_total", "Generations that ran to the end.", stats.completed.sum());
        counter(sb, "sim_injected_errors_total", "Requests answered with an injected error status.",
                stats.injectedErrors.sum());
        counter(sb, "sim_rejected_busy_total", "Requests refused because the wait queue was full.",
                stats.rejectedBusy.sum());
        ctx.response().putHeader("content-type", "text/plain; version=0.0.4; charset=utf-8").end(sb.toString());
    }

    private static void gauge(StringBuilder sb, String name, String help, String labels, double value) {
        sb.append("# HELP ").append(name).append(' ').append(help).append('\n')
                .append("# TYPE ").append(name).append(" gauge\n")
                .append(name).append(labels).append(' ').append(value).append('\n');
    }

    private static void counter(StringBuilder sb, String name, String help, long value) {
        sb.append("# HELP ").append(name).append(' ').append(help).append('\n')
                .append("# TYPE ").append(name).append(" counter\n")
                .append(name).append(' ').append(value).append('\n');
    }

    private void postFaults(RoutingContext ctx) {
        JsonObject patch;
        try {
            patch = ctx.body().asJsonObject();
        } catch (DecodeException | ClassCastException e) {
            json(ctx, 400, new JsonObject().put("error", "body must be a JSON object"));
            return;
        }
        if (patch == null) {
            json(ctx, 400, new JsonObject().put("error", "body must be a JSON object"));
            return;
        }
        try {
            faults = faults.merge(patch);
        } catch (IllegalArgumentException e) {
            json(ctx, 400, new JsonObject().put("error", e.getMessage()));
            return;
        }
        log.info("Node {} faults now {}", config.name(), faults.toJson().encode());
        json(ctx, 200, faults.toJson());
    }

    // ---- inference ------------------------------------------------------------------------------

    /** A request that named a served model and was not refused by an injected error. */
    private record Accepted(JsonObject body, String model) {
    }

    /**
     * Counts the request and checks what every model endpoint checks: a JSON body, a served model,
     * no injected error. Returns {@code null} when it already answered the request.
     */
    private Accepted accept(RoutingContext ctx, Api api) {
        stats.request(api.endpoint);
        JsonObject body = jsonBody(ctx, api);
        if (body == null) {
            return null;
        }
        String model = model(ctx, api, body);
        if (model == null) {
            return null;
        }
        Faults f = faults;
        if (f.errorStatus() != 0) {
            stats.injectedErrors.increment();
            injectedError(ctx, api, f.errorStatus());
            return null;
        }
        return new Accepted(body, model);
    }

    private void inference(RoutingContext ctx, Api api) {
        Accepted accepted = accept(ctx, api);
        if (accepted == null) {
            return;
        }
        JsonObject body = accepted.body();
        String model = accepted.model();
        boolean stream = body.getValue("stream") instanceof Boolean b ? b : api.streamsByDefault;
        int tokens = Math.min(config.tokens(), requestedMaxTokens(api, body));
        boolean includeUsage = body.getValue("stream_options") instanceof JsonObject so
                && Boolean.TRUE.equals(so.getValue("include_usage"));
        Job job = new Job(ctx, api, model, stream, tokens, includeUsage, promptTokens(api, body), nextId(api),
                nanoTicker.getAsLong());
        ctx.response().closeHandler(v -> clientGone(job));
        ctx.response().exceptionHandler(e -> log.debug("Node {} response error: {}", config.name(), e.toString()));
        admit(job);
    }

    private void admit(Job job) {
        if (running < config.maxConcurrency()) {
            start(job);
        } else if (waiting.size() < config.maxQueue()) {
            waiting.addLast(job);
        } else {
            stats.rejectedBusy.increment();
            job.finished = true;
            if (job.api.ollama) {
                json(job.ctx, 503, new JsonObject().put("error", OLLAMA_BUSY));
            } else {
                error(job.ctx, job.api, 503, "server busy: " + config.maxQueue() + " requests already waiting");
            }
        }
    }

    private void start(Job job) {
        running++;
        job.running = true;
        Faults f = faults;
        if (f.hang()) {
            return; // holds the slot, never answers; the close handler frees it
        }
        long first = f.firstTokenDelayMs() != null ? f.firstTokenDelayMs() : config.firstTokenDelay().toMillis();
        if (first == 0) {
            emit(job);
        } else {
            job.timerId = later(first, () -> emit(job));
        }
    }

    /**
     * Sends the next token and schedules the one after. With a zero token delay it loops instead of
     * scheduling: benchmarks run the sim that way so that it is never the bottleneck.
     */
    private void emit(Job job) {
        job.timerId = -1;
        while (!job.finished) {
            long delay = emitOne(job);
            if (delay > 0) {
                job.timerId = later(delay, () -> emit(job));
                return;
            }
        }
    }

    /** Sends one token; returns the delay before the next one, or 0 to go on at once (or when done). */
    private long emitOne(Job job) {
        Faults f = faults;
        if (f.dropAfterTokens() >= 0 && job.sent >= f.dropAfterTokens()) {
            stats.droppedConnections.increment();
            job.finished = true;
            release(job);
            // Close once the K tokens already written are on the wire; closing at once can drop them.
            if (job.lastWrite == null) {
                job.ctx.request().connection().close();
            } else {
                job.lastWrite.onComplete(v -> job.ctx.request().connection().close());
            }
            return 0;
        }
        HttpServerResponse response = job.ctx.response();
        String token = text.token(job.sent);
        job.sent++;
        stats.tokensSent.increment();
        if (job.stream) {
            if (job.sent == 1) {
                response.setChunked(true)
                        .putHeader("content-type", job.api.ollama ? "application/x-ndjson" : "text/event-stream")
                        .putHeader("cache-control", "no-cache");
                if (job.api == Api.OPENAI_CHAT) {
                    response.write(sse(chatChunk(job, new JsonObject().put("role", "assistant").put("content", ""),
                            null)));
                }
            }
            job.lastWrite = response.write(chunk(job, token));
        } else {
            job.text.append(token);
        }
        if (job.sent < job.tokens) {
            return f.tokenDelayMs() != null ? f.tokenDelayMs() : config.tokenDelay().toMillis();
        }
        complete(job);
        return 0;
    }

    private void complete(Job job) {
        job.finished = true;
        stats.completed.increment();
        HttpServerResponse response = job.ctx.response();
        if (job.stream) {
            switch (job.api) {
                case OLLAMA_GENERATE, OLLAMA_CHAT -> response.end(ndjson(ollamaFinal(job, "")));
                case OPENAI_CHAT -> {
                    response.write(sse(chatChunk(job, new JsonObject().put("content", ""), "stop")));
                    if (job.includeUsage) {
                        response.write(sse(usageChunk(job, "chat.completion.chunk")));
                    }
                    response.end("data: [DONE]\n\n");
                }
                case OPENAI_COMPLETION -> {
                    response.write(sse(completionChunk(job, "", "stop")));
                    if (job.includeUsage) {
                        response.write(sse(usageChunk(job, "text_completion")));
                    }
                    response.end("data: [DONE]\n\n");
                }
                default -> throw new IllegalStateException("not a generation endpoint: " + job.api);
            }
        } else {
            String whole = job.text.toString();
            JsonObject body = switch (job.api) {
                case OLLAMA_GENERATE, OLLAMA_CHAT -> ollamaFinal(job, whole);
                case OPENAI_CHAT -> openAiWhole(job, "chat.completion", new JsonObject()
                        .put("index", 0)
                        .put("message", new JsonObject().put("role", "assistant").put("content", whole))
                        .put("logprobs", null)
                        .put("finish_reason", finishReason(job)));
                case OPENAI_COMPLETION -> openAiWhole(job, "text_completion", new JsonObject()
                        .put("index", 0)
                        .put("text", whole)
                        .put("logprobs", null)
                        .put("finish_reason", finishReason(job)));
                default -> throw new IllegalStateException("not a generation endpoint: " + job.api);
            };
            json(job.ctx, 200, body);
        }
        release(job);
    }

    private void clientGone(Job job) {
        if (job.finished) {
            return;
        }
        job.finished = true;
        if (job.timerId >= 0) {
            vertx.cancelTimer(job.timerId);
            job.timerId = -1;
        }
        if (job.running) {
            stats.cancelledStreams.increment();
            log.debug("Node {} stopped generating for a client that went away after {} tokens",
                    config.name(), job.sent);
            release(job);
        } else {
            waiting.remove(job);
        }
    }

    private void release(Job job) {
        if (!job.running) {
            return;
        }
        job.running = false;
        running--;
        Iterator<Job> it = waiting.iterator();
        while (it.hasNext() && running < config.maxConcurrency()) {
            Job next = it.next();
            it.remove();
            if (!next.finished) {
                start(next);
            }
        }
    }

    private long later(long delayMs, Runnable action) {
        return vertx.setTimer(delayMs, id -> action.run());
    }

    // ---- embeddings -----------------------------------------------------------------------------

    private void embeddings(RoutingContext ctx, Api api) {
        Accepted accepted = accept(ctx, api);
        if (accepted == null) {
            return;
        }
        JsonObject body = accepted.body();
        String model = accepted.model();
        Object input = body.getValue(api == Api.OLLAMA_EMBEDDINGS_LEGACY ? "prompt" : "input");
        List<String> inputs;
        if (input instanceof String s) {
            inputs = List.of(s);
        } else if (input instanceof JsonArray a && a.stream().allMatch(String.class::isInstance)) {
            inputs = a.stream().map(String.class::cast).toList();
        } else {
            error(ctx, api, 400, api == Api.OLLAMA_EMBEDDINGS_LEGACY
                    ? "prompt must be a string" : "input must be a string or an array of strings");
            return;
        }
        long start = nanoTicker.getAsLong();
        int promptTokens = inputs.stream().mapToInt(TextSource::promptTokens).sum();
        switch (api) {
            case OLLAMA_EMBEDDINGS_LEGACY -> json(ctx, 200, new JsonObject()
                    .put("embedding", vector(model, inputs.get(0))));
            case OLLAMA_EMBED -> {
                JsonArray vectors = new JsonArray();
                inputs.forEach(in -> vectors.add(vector(model, in)));
                long took = nanoTicker.getAsLong() - start;
                json(ctx, 200, new JsonObject()
                        .put("model", model)
                        .put("embeddings", vectors)
                        .put("total_duration", took)
                        .put("load_duration", 0L)
                        .put("prompt_eval_count", promptTokens));
            }
            default -> {
                JsonArray data = new JsonArray();
                for (int i = 0; i < inputs.size(); i++) {
                    data.add(new JsonObject().put("object", "embedding").put("index", i)
                            .put("embedding", vector(model, inputs.get(i))));
                }
                json(ctx, 200, new JsonObject()
                        .put("object", "list")
                        .put("id", nextId(api))
                        .put("created", clock.instant().getEpochSecond())
                        .put("model", model)
                        .put("data", data)
                        .put("usage", new JsonObject().put("prompt_tokens", promptTokens)
                                .put("total_tokens", promptTokens)
                                .put("completion_tokens", 0)));
            }
        }
    }

    private JsonArray vector(String model, String input) {
        JsonArray a = new JsonArray();
        for (double d : TextSource.embedding(model, input, config.embeddingDim())) {
            a.add(d);
        }
        return a;
    }

    // ---- request parsing ------------------------------------------------------------------------

    private JsonObject jsonBody(RoutingContext ctx, Api api) {
        try {
            JsonObject body = ctx.body().length() == 0 ? null : ctx.body().asJsonObject();
            if (body == null) {
                error(ctx, api, 400, "request body must be a JSON object");
            }
            return body;
        } catch (DecodeException | ClassCastException e) {
            error(ctx, api, 400, "request body is not valid JSON");
            return null;
        }
    }

    /** Returns the requested model, or answers the request with the real servers' error and returns null. */
    private String model(RoutingContext ctx, Api api, JsonObject body) {
        Object value = body.getValue("model");
        if (value != null && !(value instanceof String)) {
            error(ctx, api, 400, "model must be a string");
            return null;
        }
        String model = (String) value;
        if (model == null || model.isEmpty()) {
            if (api.ollama) {
                error(ctx, api, 400, "model is required");
                return null;
            }
            return config.models().get(0); // vLLM serves its one model when none is named
        }
        if (!config.models().contains(model)) {
            stats.modelNotFound.increment();
            if (api.ollama) {
                json(ctx, 404, new JsonObject().put("error", "model '" + model + "' not found"));
            } else {
                json(ctx, 404, new JsonObject().put("error", new JsonObject()
                        .put("message", "The model `" + model + "` does not exist.")
                        .put("type", "NotFoundError")
                        .put("param", "model")
                        .put("code", 404)));
            }
            return null;
        }
        return model;
    }

    private static int requestedMaxTokens(Api api, JsonObject body) {
        Object v;
        if (api.ollama) {
            v = body.getValue("options") instanceof JsonObject o ? o.getValue("num_predict") : null;
        } else {
            v = body.getValue("max_completion_tokens") != null
                    ? body.getValue("max_completion_tokens") : body.getValue("max_tokens");
        }
        return v instanceof Number n && n.intValue() > 0 ? n.intValue() : Integer.MAX_VALUE;
    }

    private static int promptTokens(Api api, JsonObject body) {
        Object messages = body.getValue("messages");
        if (messages instanceof JsonArray a) {
            int n = 0;
            for (Object m : a) {
                if (m instanceof JsonObject o && o.getValue("content") instanceof String s) {
                    n += TextSource.promptTokens(s);
                }
            }
            return Math.max(1, n);
        }
        return body.getValue("prompt") instanceof String s ? TextSource.promptTokens(s) : 1;
    }

    // ---- response shapes ------------------------------------------------------------------------

    private Buffer chunk(Job job, String token) {
        return switch (job.api) {
            case OLLAMA_GENERATE -> ndjson(new JsonObject()
                    .put("model", job.model)
                    .put("created_at", now())
                    .put("response", token)
                    .put("done", false));
            case OLLAMA_CHAT -> ndjson(new JsonObject()
                    .put("model", job.model)
                    .put("created_at", now())
                    .put("message", new JsonObject().put("role", "assistant").put("content", token))
                    .put("done", false));
            case OPENAI_CHAT -> sse(chatChunk(job, new JsonObject().put("content", token), null));
            case OPENAI_COMPLETION -> sse(completionChunk(job, token, null));
            default -> throw new IllegalStateException("not a generation endpoint: " + job.api);
        };
    }

    private JsonObject ollamaFinal(Job job, String content) {
        long total = nanoTicker.getAsLong() - job.startNanos;
        JsonObject o = new JsonObject().put("model", job.model).put("created_at", now());
        if (job.api == Api.OLLAMA_CHAT) {
            o.put("message", new JsonObject().put("role", "assistant").put("content", content));
        } else {
            o.put("response", content);
        }
        o.put("done", true).put("done_reason", finishReason(job));
        if (job.api == Api.OLLAMA_GENERATE) {
            JsonArray context = new JsonArray();
            for (int i = 0; i < Math.min(job.promptTokens + job.sent, 64); i++) {
                context.add(1000 + i);
            }
            o.put("context", context);
        }
        long promptEval = Math.min(total, config.firstTokenDelay().toNanos());
        return o.put("total_duration", total)
                .put("load_duration", 0L)
                .put("prompt_eval_count", job.promptTokens)
                .put("prompt_eval_duration", promptEval)
                .put("eval_count", job.sent)
                .put("eval_duration", Math.max(0, total - promptEval));
    }

    private JsonObject chatChunk(Job job, JsonObject delta, String finishReason) {
        return new JsonObject()
                .put("id", job.id)
                .put("object", "chat.completion.chunk")
                .put("created", job.created)
                .put("model", job.model)
                .put("choices", new JsonArray().add(new JsonObject()
                        .put("index", 0)
                        .put("delta", delta)
                        .put("logprobs", null)
                        .put("finish_reason", finishReason == null ? null : finishReason(job))));
    }

    private JsonObject completionChunk(Job job, String token, String finishReason) {
        return new JsonObject()
                .put("id", job.id)
                .put("object", "text_completion")
                .put("created", job.created)
                .put("model", job.model)
                .put("choices", new JsonArray().add(new JsonObject()
                        .put("index", 0)
                        .put("text", token)
                        .put("logprobs", null)
                        .put("finish_reason", finishReason == null ? null : finishReason(job))));
    }

    private JsonObject usageChunk(Job job, String object) {
        return new JsonObject()
                .put("id", job.id)
                .put("object", object)
                .put("created", job.created)
                .put("model", job.model)
                .put("choices", new JsonArray())
                .put("usage", usage(job));
    }

    private JsonObject openAiWhole(Job job, String object, JsonObject choice) {
        return new JsonObject()
                .put("id", job.id)
                .put("object", object)
                .put("created", job.created)
                .put("model", job.model)
                .put("choices", new JsonArray().add(choice))
                .put("usage", usage(job));
    }

    private static JsonObject usage(Job job) {
        return new JsonObject()
                .put("prompt_tokens", job.promptTokens)
                .put("total_tokens", job.promptTokens + job.sent)
                .put("completion_tokens", job.sent);
    }

    private String finishReason(Job job) {
        return job.sent >= config.tokens() ? "stop" : "length";
    }

    private void injectedError(RoutingContext ctx, Api api, int status) {
        if (api.ollama && status == 503) {
            json(ctx, 503, new JsonObject().put("error", OLLAMA_BUSY));
        } else {
            error(ctx, api, status, "simulated error (fault injection)");
        }
    }

    private static void error(RoutingContext ctx, Api api, int status, String message) {
        if (api.ollama) {
            json(ctx, status, new JsonObject().put("error", message));
        } else {
            String type = switch (status) {
                case 400 -> "BadRequestError";
                case 404 -> "NotFoundError";
                case 413 -> "BadRequestError";
                case 429 -> "RateLimitError";
                case 503 -> "ServiceUnavailableError";
                default -> "InternalServerError";
            };
            json(ctx, status, new JsonObject().put("error", new JsonObject()
                    .put("message", message).put("type", type).put("param", null).put("code", status)));
        }
    }

    private static void json(RoutingContext ctx, int status, JsonObject body) {
        ctx.response().setStatusCode(status).putHeader("content-type", "application/json; charset=utf-8")
                .end(body.encode());
    }

    private static Buffer ndjson(JsonObject o) {
        return Buffer.buffer(o.encode() + "\n");
    }

    private static Buffer sse(JsonObject o) {
        return Buffer.buffer("data: " + o.encode() + "\n\n");
    }

    private String now() {
        return clock.instant().toString();
    }

    private String nextId(Api api) {
        idCounter++;
        String prefix = switch (api) {
            case OPENAI_CHAT -> "chatcmpl-";
            case OPENAI_COMPLETION -> "cmpl-";
            default -> "embd-";
        };
        return prefix + config.name().replaceAll("[^A-Za-z0-9]", "") + "-" + Long.toHexString(idCounter);
    }

    private static String digest(String model) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(model.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    private static String escape(String labelValue) {
        return labelValue.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    /** The endpoints that run a model, and how each one talks. */
    enum Api {
        OLLAMA_GENERATE("ollama.generate", true, true),
        OLLAMA_CHAT("ollama.chat", true, true),
        OLLAMA_EMBED("ollama.embed", true, false),
        OLLAMA_EMBEDDINGS_LEGACY("ollama.embeddings", true, false),
        OPENAI_CHAT("openai.chat", false, false),
        OPENAI_COMPLETION("openai.completions", false, false),
        OPENAI_EMBEDDINGS("openai.embeddings", false, false);

        final String endpoint;
        final boolean ollama;
        final boolean streamsByDefault;

        Api(String endpoint, boolean ollama, boolean streamsByDefault) {
            this.endpoint = endpoint;
            this.ollama = ollama;
            this.streamsByDefault = streamsByDefault;
        }

        static Api of(String path) {
            return path != null && path.startsWith("/api/") ? OLLAMA_GENERATE : OPENAI_CHAT;
        }
    }

    /** One generation request; touched only on the event loop. */
    private final class Job {
        final RoutingContext ctx;
        final Api api;
        final String model;
        final boolean stream;
        final int tokens;
        final boolean includeUsage;
        final int promptTokens;
        final String id;
        final long startNanos;
        final long created = Instant.now(clock).getEpochSecond();
        final StringBuilder text = new StringBuilder();
        long timerId = -1;
        io.vertx.core.Future<Void> lastWrite;
        int sent;
        boolean running;
        boolean finished;

        Job(RoutingContext ctx, Api api, String model, boolean stream, int tokens, boolean includeUsage,
            int promptTokens, String id, long startNanos) {
            this.ctx = ctx;
            this.api = api;
            this.model = model;
            this.stream = stream;
            this.tokens = tokens;
            this.includeUsage = includeUsage;
            this.promptTokens = promptTokens;
            this.id = id;
            this.startNanos = startNanos;
        }
    }
}
