package io.heartgate.sim;

import io.heartgate.sim.Requests.Accepted;
import io.heartgate.sim.Requests.Ask;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * Speaks Ollama's API ({@code /} and {@code /api/*}) in the shapes of Ollama {@value #VERSION}: NDJSON
 * streams with a final object of durations, model lists, model descriptions ({@code /api/show}),
 * embeddings and Ollama's error objects.
 *
 * <p>Partial answers are continued ({@link Continuation}) where Ollama continues them: a raw
 * {@code /api/generate} prompt (no template) that ends with sim output, and, with prefill on, an
 * {@code /api/chat} whose final message is the assistant's. A model's template may leave that message
 * open (one over {@code .Messages} that tests {@code not $last}; a legacy one, cut after
 * {@code .Response}, {@code template/template.go}), and the model goes on with it; a template that
 * closes every turn makes it a new answer, as with prefill off. {@code /api/show} gives each model a
 * template of the matching kind, so an agent that reads it reports what the sim does.
 */
final class OllamaApi implements Dialect {

    static final String VERSION = "0.11.6";
    private static final String BUSY = "server busy, please try again.  maximum pending requests exceeded";
    /**
     * The template {@code /api/show} gives with prefill on: llama3-style, over {@code .Messages}, leaving
     * out the end of turn after a last assistant message ({@code if not $last}) as Ollama's continuing
     * templates do, so the model goes on with that message.
     */
    static final String CONTINUING_TEMPLATE = """
            {{- range $i, $_ := .Messages }}
            {{- $last := eq (len (slice $.Messages $i)) 1 }}
            {{- if eq .Role "assistant" }}<|start_header_id|>assistant<|end_header_id|>

            {{ .Content }}{{ if not $last }}<|eot_id|>{{ end }}
            {{- else }}<|start_header_id|>{{ .Role }}<|end_header_id|>

            {{ .Content }}<|eot_id|>{{ if $last }}<|start_header_id|>assistant<|end_header_id|>

            {{ end }}
            {{- end }}
            {{- end }}""";
    /**
     * The template {@code /api/show} gives with prefill off: ChatML as Ollama bundles it
     * ({@code template/chatml.gotmpl}), which ends every turn and opens a new assistant one after the
     * last, so a final assistant message is answered anew.
     */
    static final String CLOSING_TEMPLATE = """
            {{- range .Messages }}<|im_start|>{{ .Role }}
            {{ .Content }}<|im_end|>
            {{ end }}<|im_start|>assistant
            """;

    private final SimEngine engine;
    private final Requests requests;
    private final FaultControl faults;
    private final Clock clock;
    private final LongSupplier nanos;
    private final Duration firstTokenDelay;
    private final boolean prefill;

    /**
     * Creates the adapter; it serves nothing until {@link #mount} adds its routes.
     *
     * @param clock wall clock for {@code created_at} and {@code expires_at}
     * @param nanos monotonic nanoseconds for the embedding duration
     * @param firstTokenDelay the configured delay, reported as prompt evaluation time
     * @param prefill a chat's final assistant message is continued rather than answered anew
     */
    OllamaApi(SimEngine engine, Requests requests, FaultControl faults, Clock clock, LongSupplier nanos,
              Duration firstTokenDelay, boolean prefill) {
        this.engine = engine;
        this.requests = requests;
        this.faults = faults;
        this.clock = clock;
        this.nanos = nanos;
        this.firstTokenDelay = firstTokenDelay;
        this.prefill = prefill;
    }

    /** Adds Ollama's routes to {@code router}. */
    void mount(Router router) {
        router.get("/").handler(ctx -> ctx.response().putHeader("content-type", "text/plain; charset=utf-8")
                .end("Ollama is running"));
        router.get("/api/version").handler(this::version);
        router.get("/api/tags").handler(ctx -> Requests.json(ctx, 200, models(false)));
        router.get("/api/ps").handler(ctx -> Requests.json(ctx, 200, models(true)));
        router.post("/api/show").handler(this::show);
        router.post("/api/generate").handler(ctx -> generate(ctx, false));
        router.post("/api/chat").handler(ctx -> generate(ctx, true));
        router.post("/api/embed").handler(ctx -> embed(ctx, false));
        router.post("/api/embeddings").handler(ctx -> embed(ctx, true));
    }

    private void version(RoutingContext ctx) {
        if (faults.current().failHealth()) {
            Requests.json(ctx, 503, new JsonObject().put("error", "unhealthy"));
        } else {
            Requests.json(ctx, 200, new JsonObject().put("version", VERSION));
        }
    }

    private JsonObject models(boolean loaded) {
        JsonArray models = new JsonArray();
        for (String model : loaded ? engine.loadedModels() : engine.models()) {
            JsonObject m = new JsonObject()
                    .put("name", model)
                    .put("model", model)
                    .put("size", 4_661_224_676L);
            if (!loaded) {
                m.put("modified_at", "2026-11-01T12:00:00Z");
            }
            m.put("digest", digest(model)).put("details", details());
            if (loaded) {
                m.put("expires_at", clock.instant().plusSeconds(300).toString())
                        .put("size_vram", 4_661_224_676L)
                        .put("context_length", 4096);
            }
            models.add(m);
        }
        return new JsonObject().put("models", models);
    }

    /**
     * Answers {@code /api/show} in the shape of Ollama's {@code ShowResponse} ({@code api/types.go}):
     * the modelfile, parameters and template, the details {@code /api/tags} gives, a model_info and the
     * capabilities. The template is the one whose chat behaviour the sim has ({@link #CONTINUING_TEMPLATE}
     * with prefill on, {@link #CLOSING_TEMPLATE} off), so whoever reads it learns what the sim does.
     */
    private void show(RoutingContext ctx) {
        Optional<Accepted> accepted = requests.accept(ctx, "ollama.show", this);
        if (accepted.isEmpty()) {
            return;
        }
        String model = accepted.get().model();
        String template = prefill ? CONTINUING_TEMPLATE : CLOSING_TEMPLATE;
        String stop = prefill ? "<|eot_id|>" : "<|im_end|>";
        String modelfile = "# Modelfile generated by \"ollama show\"\n"
                + "# To build a new Modelfile based on this, replace FROM with:\n"
                + "# FROM " + model + "\n\n"
                + "FROM /usr/share/ollama/.ollama/models/blobs/sha256-" + digest(model) + "\n"
                + "TEMPLATE " + modelfileQuote(template) + "\n"
                + "PARAMETER stop " + stop + "\n";
        Requests.json(ctx, 200, new JsonObject()
                .put("modelfile", modelfile)
                .put("parameters", String.format("%-30s \"%s\"", "stop", stop))
                .put("template", template)
                .put("details", details())
                .put("model_info", new JsonObject()
                        .put("general.architecture", "llama")
                        .put("general.parameter_count", 8_030_261_248L)
                        .put("llama.context_length", 8192))
                .put("capabilities", new JsonArray().add("completion"))
                .put("modified_at", "2026-11-01T12:00:00Z"));
    }

    /** Quotes a modelfile argument as Ollama's {@code parser.quote} does. */
    private static String modelfileQuote(String s) {
        if (s.contains("\n") || s.startsWith(" ") || s.endsWith(" ")) {
            return s.contains("\"") ? "\"\"\"" + s + "\"\"\"" : "\"" + s + "\"";
        }
        return s;
    }

    private static JsonObject details() {
        return new JsonObject()
                .put("parent_model", "")
                .put("format", "gguf")
                .put("family", "llama")
                .put("families", new JsonArray().add("llama"))
                .put("parameter_size", "8.0B")
                .put("quantization_level", "Q4_0");
    }

    private void generate(RoutingContext ctx, boolean chat) {
        Optional<Accepted> accepted = requests.accept(ctx, chat ? "ollama.chat" : "ollama.generate", this);
        if (accepted.isEmpty()) {
            return;
        }
        JsonObject body = accepted.get().body();
        boolean stream = !(body.getValue("stream") instanceof Boolean b) || b; // Ollama streams unless told not to
        Object numPredict = body.getValue("options") instanceof JsonObject o ? o.getValue("num_predict") : null;
        boolean raw = !chat && body.getValue("raw") instanceof Boolean r && r;
        int start;
        if (chat) {
            start = prefill ? Continuation.lastMessage(body).filter(Continuation::isAssistant)
                    .map(Continuation::fromAssistant).orElse(0) : 0;
        } else {
            start = raw ? Continuation.fromPrompt(body.getValue("prompt")) : 0;
        }
        Ask ask = new Ask(accepted.get().model(), chat, stream, Requests.promptTokens(body));
        requests.generate(ctx, ask.model(), Requests.maxTokens(numPredict), start, new Answer(ctx, ask, raw), this,
                body);
    }

    private void embed(RoutingContext ctx, boolean legacy) {
        Optional<Accepted> accepted = requests.accept(ctx, legacy ? "ollama.embeddings" : "ollama.embed", this);
        if (accepted.isEmpty()) {
            return;
        }
        String model = accepted.get().model();
        Optional<List<String>> inputs = Requests.inputs(accepted.get().body().getValue(legacy ? "prompt" : "input"));
        if (inputs.isEmpty()) {
            error(ctx, 400, legacy ? "prompt must be a string" : "input must be a string or an array of strings");
        } else if (legacy) {
            Requests.json(ctx, 200, new JsonObject()
                    .put("embedding", Requests.json(engine.embedding(model, inputs.get().get(0)))));
        } else {
            long start = nanos.getAsLong();
            JsonArray vectors = new JsonArray();
            inputs.get().forEach(in -> vectors.add(Requests.json(engine.embedding(model, in))));
            requests.usageReported(Requests.promptTokens(inputs.get()), 0);
            Requests.json(ctx, 200, new JsonObject()
                    .put("model", model)
                    .put("embeddings", vectors)
                    .put("total_duration", nanos.getAsLong() - start)
                    .put("load_duration", 0L)
                    .put("prompt_eval_count", Requests.promptTokens(inputs.get())));
        }
    }

    @Override
    public void error(RoutingContext ctx, int status, String message) {
        Requests.json(ctx, status, new JsonObject().put("error", message));
    }

    @Override
    public void modelNotFound(RoutingContext ctx, String model) {
        error(ctx, 404, "model '" + model + "' not found");
    }

    @Override
    public Optional<String> unnamedModel(RoutingContext ctx) {
        error(ctx, 400, "model is required");
        return Optional.empty();
    }

    @Override
    public void busy(RoutingContext ctx, int maxQueue) {
        error(ctx, 503, BUSY);
    }

    @Override
    public void injectedError(RoutingContext ctx, int status) {
        if (status == 503) {
            error(ctx, 503, BUSY); // a real Ollama's only 503 is its busy answer
        } else {
            Dialect.super.injectedError(ctx, status);
        }
    }

    private static String digest(String model) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(model.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    /**
     * Writes one generation as Ollama does: a line per token then a final object, or that object alone;
     * the final object of a generate has the {@code context} tokens unless its prompt was raw
     * ({@code server/routes.go}, {@code GenerateHandler}).
     */
    private final class Answer implements TokenSink {
        private final RoutingContext ctx;
        private final Ask ask;
        private final boolean raw;
        private final ResponseStream out;

        Answer(RoutingContext ctx, Ask ask, boolean raw) {
            this.ctx = ctx;
            this.ask = ask;
            this.raw = raw;
            this.out = new ResponseStream(ctx, "application/x-ndjson");
        }

        @Override
        public void token(Generation g, String token) {
            if (ask.stream()) {
                out.write(line(content(head(), token).put("done", false)));
            }
        }

        @Override
        public void finish(Generation g) {
            if (ask.stream()) {
                out.end(line(last(g, "")));
            } else {
                Requests.json(ctx, 200, last(g, g.text()));
            }
        }

        @Override
        public void cut(Generation g) {
            out.cut();
        }

        private JsonObject head() {
            return new JsonObject().put("model", ask.model()).put("created_at", clock.instant().toString());
        }

        private JsonObject content(JsonObject o, String text) {
            return ask.chat() ? o.put("message", new JsonObject().put("role", "assistant").put("content", text))
                    : o.put("response", text);
        }

        private JsonObject last(Generation g, String text) {
            long total = g.elapsedNanos();
            JsonObject o = content(head(), text).put("done", true).put("done_reason", g.finishReason());
            if (!ask.chat() && !raw) {
                JsonArray context = new JsonArray();
                for (int i = 0; i < Math.min(ask.promptTokens() + g.sent(), 64); i++) {
                    context.add(1000 + i);
                }
                o.put("context", context);
            }
            long promptEval = Math.min(total, firstTokenDelay.toNanos());
            requests.usageReported(ask.promptTokens(), g.sent());
            return o.put("total_duration", total)
                    .put("load_duration", g.loadWaitNanos())
                    .put("prompt_eval_count", ask.promptTokens())
                    .put("prompt_eval_duration", promptEval)
                    .put("eval_count", g.sent())
                    .put("eval_duration", Math.max(0, total - promptEval));
        }
    }

    private static String line(JsonObject o) {
        return o.encode() + "\n";
    }
}
