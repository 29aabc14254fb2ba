package io.heartgate.sim;

import io.heartgate.sim.SimEngine.Admission;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Does for every wire format what every model endpoint does: counts the request, reads its JSON body,
 * checks the model, applies an injected error, and hands generations to the engine; plus the parsing
 * and JSON writing the formats share. Used on the server's event loop.
 */
final class Requests {

    private static final Logger log = LoggerFactory.getLogger(Requests.class);

    /** A request that named a loaded model and was not refused by an injected error. */
    record Accepted(JsonObject body, String model) {
    }

    /**
     * The facts of one generation request that shape its answer, read once from the body.
     *
     * @param chat a chat (messages) rather than a completion (prompt)
     * @param stream tokens go out as they come rather than in one answer at the end
     * @param promptTokens the rough prompt length reported in usage figures
     */
    record Ask(String model, boolean chat, boolean stream, int promptTokens) {
    }

    private final String nodeName;
    private final SimEngine engine;
    private final SimStats stats;
    private final FaultControl faults;

    Requests(String nodeName, SimEngine engine, SimStats stats, FaultControl faults) {
        this.nodeName = nodeName;
        this.engine = engine;
        this.stats = stats;
        this.faults = faults;
    }

    /**
     * Counts the request under {@code endpoint} and checks it; returns empty once {@code dialect} has
     * answered it with a refusal.
     */
    Optional<Accepted> accept(RoutingContext ctx, String endpoint, Dialect dialect) {
        stats.request(endpoint);
        Optional<JsonObject> body = jsonBody(ctx, dialect);
        Optional<String> model = body.flatMap(b -> model(ctx, b, dialect));
        if (model.isEmpty()) {
            return Optional.empty();
        }
        int status = faults.current().errorStatus();
        if (status != 0) {
            stats.injectedErrors.increment();
            dialect.injectedError(ctx, status);
            return Optional.empty();
        }
        return Optional.of(new Accepted(body.get(), model.get()));
    }

    /** Counts a request to {@code endpoint} that has no body to check, such as a retrieval. */
    void count(String endpoint) {
        stats.request(endpoint);
    }

    /**
     * Runs a generation of {@code model} of at most {@code maxTokens} tokens into {@code sink}, from token
     * {@code start} of the node's answer (more than 0 continues a partial answer, and is counted),
     * stopping it when the client goes away, and answers "busy" through {@code dialect} when the engine
     * refuses it.
     */
    void generate(RoutingContext ctx, String model, int maxTokens, int start, TokenSink sink, Dialect dialect,
                  JsonObject body) {
        boolean chat = body.getValue("messages") instanceof JsonArray;
        Generation g = engine.open(model, maxTokens, sink, promptText(body, start > 0), chat, start);
        ctx.response().closeHandler(v -> engine.cancel(g));
        ctx.response().exceptionHandler(e -> log.debug("Node {} response error: {}", nodeName, e.toString()));
        if (engine.admit(g) == Admission.BUSY) {
            dialect.busy(ctx, engine.maxQueue());
        } else if (start > 0) {
            stats.continued.increment();
        }
    }

    private static Optional<JsonObject> jsonBody(RoutingContext ctx, Dialect dialect) {
        try {
            JsonObject body = ctx.body().length() == 0 ? null : ctx.body().asJsonObject();
            if (body == null) {
                dialect.error(ctx, 400, "request body must be a JSON object");
            }
            return Optional.ofNullable(body);
        } catch (DecodeException | ClassCastException e) {
            dialect.error(ctx, 400, "request body is not valid JSON");
            return Optional.empty();
        }
    }

    private Optional<String> model(RoutingContext ctx, JsonObject body, Dialect dialect) {
        Object value = body.getValue("model");
        if (value != null && !(value instanceof String)) {
            dialect.error(ctx, 400, "model must be a string");
            return Optional.empty();
        }
        String model = (String) value;
        if (model == null || model.isEmpty()) {
            return dialect.unnamedModel(ctx);
        }
        if (!engine.serves(model)) {
            stats.modelNotFound.increment();
            dialect.modelNotFound(ctx, model);
            return Optional.empty();
        }
        return Optional.of(model);
    }

    /** Returns a request's token limit: {@code value} when a positive number, else no limit. */
    static int maxTokens(Object value) {
        return value instanceof Number n && n.intValue() > 0 ? n.intValue() : Integer.MAX_VALUE;
    }

    /** Returns the rough prompt length of a chat ({@code messages}) or completion ({@code prompt}), at least 1. */
    static int promptTokens(JsonObject body) {
        if (body.getValue("messages") instanceof JsonArray messages) {
            int n = 0;
            for (Object m : messages) {
                if (m instanceof JsonObject o && o.getValue("content") instanceof String s) {
                    n += TextSource.promptTokens(s);
                }
            }
            return Math.max(1, n);
        }
        return body.getValue("prompt") instanceof String s ? TextSource.promptTokens(s) : 1;
    }

    /** Notes the token counts an answer reported in its usage figures: what a gateway's accounting must match. */
    void usageReported(int promptTokens, int completionTokens) {
        stats.usagePromptTokens.add(promptTokens);
        stats.usageCompletionTokens.add(completionTokens);
    }

    /**
     * Returns the prompt as a server renders it before prefill, for the prefix cache: a chat's
     * messages in order, each as its role and content, or a completion's {@code system} (Ollama) and
     * {@code prompt}; so every turn of one conversation starts with the turns before it. A chat whose
     * answer is {@code continued} ends inside its final message, which the template leaves open.
     */
    static String promptText(JsonObject body, boolean continued) {
        StringBuilder sb = new StringBuilder();
        if (body.getValue("messages") instanceof JsonArray messages) {
            for (Object m : messages) {
                if (m instanceof JsonObject o && o.getValue("content") instanceof String s) {
                    sb.append('<').append(o.getValue("role") instanceof String r ? r : "user").append(">\n")
                            .append(s).append('\n');
                }
            }
            if (continued && Continuation.lastMessage(body).filter(o -> o.getValue("content") instanceof String)
                    .isPresent()) {
                sb.setLength(sb.length() - 1);
            }
            return sb.toString();
        }
        if (body.getValue("system") instanceof String system) {
            sb.append("<system>\n").append(system).append('\n');
        }
        if (body.getValue("prompt") instanceof String prompt) {
            sb.append(prompt);
        }
        return sb.toString();
    }

    /** Returns embedding inputs given as a string or an array of strings, or empty for anything else. */
    static Optional<List<String>> inputs(Object value) {
        if (value instanceof String s) {
            return Optional.of(List.of(s));
        }
        if (value instanceof JsonArray a && a.stream().allMatch(String.class::isInstance)) {
            return Optional.of(a.stream().map(String.class::cast).toList());
        }
        return Optional.empty();
    }

    /** Returns the sum of the rough token counts of {@code inputs}. */
    static int promptTokens(List<String> inputs) {
        return inputs.stream().mapToInt(TextSource::promptTokens).sum();
    }

    /** Returns {@code vector} as a JSON array. */
    static JsonArray json(double[] vector) {
        JsonArray a = new JsonArray();
        for (double d : vector) {
            a.add(d);
        }
        return a;
    }

    /** Answers {@code status} with {@code body} as JSON. */
    static void json(RoutingContext ctx, int status, JsonObject body) {
        ctx.response().setStatusCode(status).putHeader("content-type", "application/json; charset=utf-8")
                .end(body.encode());
    }
}
