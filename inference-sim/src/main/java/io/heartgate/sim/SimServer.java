package io.heartgate.sim;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.time.Clock;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one simulated inference node: Ollama ({@code /api/*}), OpenAI-compatible ({@code /v1/*}, the
 * Responses API with vLLM's store among them) and Anthropic ({@code /v1/messages}, as llama.cpp serves it)
 * endpoints, vLLM/TGI-style health and metrics, and the simulator's own fault and stats endpoints.
 *
 * <p>All request state lives on this verticle's single event loop, so the slot count and the wait
 * queue need no locks. Generation is a chain of timers: a client that disconnects cancels the chain
 * at once, which is how a real server stops spending GPU time on a stream nobody reads.
 */
public final class SimServer extends VerticleBase {

    private static final Logger log = LoggerFactory.getLogger(SimServer.class);
    private static final long BODY_LIMIT_BYTES = 16L * 1024 * 1024;

    private final SimConfig config;
    private final SimStats stats = new SimStats();
    private final FaultControl faults;
    private final SimEngine engine;
    private final OllamaApi ollama;
    private final OpenAiApi openAi;
    private final AnthropicApi anthropic;
    private final ResponsesApi responses;
    private final PrometheusText metrics;
    private volatile int actualPort = -1;
    private HttpServer server;

    /**
     * Creates the server; nothing listens until it is deployed.
     *
     * @param clock wall clock for {@code created_at} fields
     * @param nanoTicker monotonic nanoseconds for the duration fields
     */
    public SimServer(SimConfig config, Clock clock, LongSupplier nanoTicker) {
        this.config = config;
        this.faults = new FaultControl(config.name(), config.faults());
        this.engine = new SimEngine(config, faults::current, nanoTicker, new EventLoopTimers(), stats);
        Requests requests = new Requests(config.name(), engine, stats, faults);
        this.ollama = new OllamaApi(engine, requests, faults, clock, nanoTicker, config.firstTokenDelay(),
                config.ollamaPrefill());
        this.openAi = new OpenAiApi(config.name(), engine, requests, faults, clock);
        this.anthropic = new AnthropicApi(config.name(), engine, requests);
        // Random response ids, as vLLM's: another process, or this node restarted, never reuses one.
        this.responses = new ResponsesApi(requests, openAi, faults, clock, new SplittableRandom(), new ResponseStore());
        this.metrics = new PrometheusText(engine, stats);
    }

    /** Returns the port actually listened on, or -1 before the server listens. */
    public int port() {
        return actualPort;
    }

    /** Returns the faults in force now. */
    public Faults faults() {
        return faults.current();
    }

    /** Replaces the faults in force; safe from any thread. */
    public void setFaults(Faults newFaults) {
        faults.set(newFaults);
    }

    @Override
    public Future<?> start() {
        Router router = Router.router(vertx);
        router.route().handler(BodyHandler.create(false).setBodyLimit(BODY_LIMIT_BYTES));
        if (config.apiKey() != null) {
            router.post().handler(this::requireKey);
            router.get("/v1/responses/*").handler(this::requireKey); // stored answers: vLLM guards them too
        }
        ollama.mount(router);
        openAi.mount(router);
        anthropic.mount(router);
        responses.mount(router);
        faults.mount(router);
        router.get("/metrics").handler(ctx -> ctx.response().putHeader("content-type", PrometheusText.CONTENT_TYPE)
                .end(metrics.render()));
        router.get("/sim/stats").handler(ctx ->
                Requests.json(ctx, 200, stats.toJson(config.name(), engine.running(), engine.waiting(), engine.busySlotNanos(),
                        engine.loadedModels())));

        router.errorHandler(413, ctx -> dialect(ctx).error(ctx, 413, "request body too large"));
        router.errorHandler(500, ctx -> {
            log.warn("Node {} failed a request to {}", config.name(), ctx.request().path(), ctx.failure());
            if (!ctx.response().headWritten()) {
                dialect(ctx).error(ctx, 500, "internal error in the simulator");
            }
        });

        server = vertx.createHttpServer(new HttpServerOptions().setIdleTimeout(0));
        return server.requestHandler(router).listen(config.port(), config.bindHost()).onSuccess(s -> {
            actualPort = s.actualPort();
            // The exact line scripts and tests wait for (see docs/REFERENCE.md).
            log.info("inference-sim listening on {}:{}", config.bindHost(), s.actualPort());
        });
    }

    /**
     * vLLM with {@code --api-key}: a missing or wrong bearer token is 401 {@code {"error":"Unauthorized"}}.
     * Only inference calls (POST) and stored responses ({@code GET /v1/responses/...}) are guarded, so an
     * agent without the key can still probe the node.
     * {@code /v1/messages} also takes the key as Anthropic's clients send it, in {@code x-api-key} when
     * there is no {@code authorization} header, and refuses as llama.cpp does ({@code "Invalid API Key"},
     * {@code middleware_validate_api_key} in llama.cpp's {@code tools/server/server-http.cpp}), in
     * Anthropic's error shape.
     */
    private void requireKey(RoutingContext ctx) {
        boolean messages = isMessages(ctx);
        String auth = ctx.request().getHeader("authorization");
        if ((auth != null && auth.equals("Bearer " + config.apiKey()))
                || (messages && auth == null && config.apiKey().equals(ctx.request().getHeader("x-api-key")))) {
            ctx.next();
            return;
        }
        stats.unauthorized.increment();
        if (messages) {
            anthropic.error(ctx, 401, "Invalid API Key");
        } else {
            Requests.json(ctx, 401, new JsonObject().put("error", "Unauthorized"));
        }
    }

    @Override
    public Future<?> stop() {
        return server == null ? Future.succeededFuture() : server.close();
    }

    /**
     * Returns the format whose error shape a failed request gets: Ollama's under {@code /api/}, Anthropic's
     * on {@code /v1/messages}, else OpenAI's.
     */
    private Dialect dialect(RoutingContext ctx) {
        if (isMessages(ctx)) {
            return anthropic;
        }
        String path = ctx.request().path();
        return path != null && path.startsWith("/api/") ? ollama : openAi;
    }

    private static boolean isMessages(RoutingContext ctx) {
        return "/v1/messages".equals(ctx.request().path());
    }

    /** Runs the engine's timers on this verticle's event loop, the thread that drives the engine. */
    private final class EventLoopTimers implements Timers {
        @Override
        public long schedule(long delayMs, Runnable action) {
            return vertx.setTimer(delayMs, id -> action.run());
        }

        @Override
        public void cancel(long id) {
            vertx.cancelTimer(id);
        }
    }
}
