package io.heartgate.sim;

import io.heartgate.sim.AnthropicRequest.Refused;
import io.heartgate.sim.Requests.Accepted;
import io.heartgate.sim.Requests.Ask;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.Optional;

/**
 * Speaks Anthropic's Messages API ({@code POST /v1/messages}) the way llama.cpp's server serves it: the
 * request read as a chat whose final assistant message is continued ({@link AnthropicRequest}), and the
 * answer in the shapes of ggml-org/llama.cpp {@code tools/server/server-task.cpp}, text only.
 *
 * <p>Whole ({@code server_task_result_cmpl_final::to_json_anthropic}): {@code id, type, role, content,
 * model, stop_reason, stop_sequence, usage{input_tokens, output_tokens}}, in that order, the content one
 * text block, or none for an answer with no text. {@code stop_reason} is {@code end_turn} when the model
 * said all it had and {@code max_tokens} when the limit cut it; {@code stop_sequence} is null.
 *
 * <p>Streamed, as server-sent events with {@code event:} lines ({@code format_anthropic_sse} in
 * {@code tools/server/server-common.cpp}), no {@code ping} and no {@code [DONE]}: with the first token
 * ({@code server_task_result_cmpl_partial::to_json_anthropic}, {@code n_decoded == 1}) a
 * {@code message_start} whose message has empty content, null stop fields and usage {@code input_tokens}
 * N and {@code output_tokens} 0, then the {@code content_block_start} (index 0, text "") that opens the
 * text block before its first delta; a {@code content_block_delta} ({@code text_delta}) per token; at the
 * end ({@code to_json_anthropic_stream}) {@code content_block_stop} when there was text,
 * {@code message_delta} ({@code delta{stop_reason, stop_sequence}}, {@code usage{output_tokens}}) and
 * {@code message_stop}. An answer with no token (a continued answer that was whole) opens with
 * {@code message_start} and has no content block.
 *
 * <p>Where the sim departs from llama.cpp it follows Anthropic: ids are {@code msg_...} (llama.cpp reuses
 * its {@code chatcmpl-} ids) and refusals have Anthropic's error shape, {@code {"type":"error","error":
 * {"type":...,"message":...}}} (llama.cpp sends its OpenAI-style error object).
 */
final class AnthropicApi implements Dialect {

    private final SimEngine engine;
    private final Requests requests;
    private final String idName;

    /**
     * Creates the adapter; it serves nothing until {@link #mount} adds its route.
     *
     * @param nodeName the node's name; its letters and digits go into every message id
     */
    AnthropicApi(String nodeName, SimEngine engine, Requests requests) {
        this.engine = engine;
        this.requests = requests;
        this.idName = nodeName.replaceAll("[^A-Za-z0-9]", "");
    }

    /** Adds {@code POST /v1/messages} to {@code router}. */
    void mount(Router router) {
        router.post("/v1/messages").handler(this::messages);
    }

    private void messages(RoutingContext ctx) {
        Optional<Accepted> accepted = requests.accept(ctx, "anthropic.messages", this);
        if (accepted.isEmpty()) {
            return;
        }
        AnthropicRequest request;
        try {
            request = AnthropicRequest.read(accepted.get().body());
        } catch (Refused e) {
            error(ctx, 400, e.getMessage());
            return;
        }
        Ask ask = new Ask(accepted.get().model(), true, request.stream(), Requests.promptTokens(request.chat()));
        requests.generate(ctx, ask.model(), request.maxTokens(), request.start(), new Answer(ctx, ask), this,
                request.chat());
    }

    @Override
    public void error(RoutingContext ctx, int status, String message) {
        Requests.json(ctx, status, new JsonObject().put("type", "error")
                .put("error", new JsonObject().put("type", errorType(status)).put("message", message)));
    }

    /** Returns Anthropic's error type for {@code status}; the sim's busy 503 is Anthropic's overload. */
    static String errorType(int status) {
        return switch (status) {
            case 401 -> "authentication_error";
            case 403 -> "permission_error";
            case 404 -> "not_found_error";
            case 413 -> "request_too_large";
            case 429 -> "rate_limit_error";
            case 503 -> "overloaded_error";
            default -> status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
        };
    }

    @Override
    public void modelNotFound(RoutingContext ctx, String model) {
        error(ctx, 404, "model: " + model);
    }

    @Override
    public Optional<String> unnamedModel(RoutingContext ctx) {
        return Optional.of(engine.defaultModel()); // llama.cpp answers with its one model whatever is named
    }

    @Override
    public void busy(RoutingContext ctx, int maxQueue) {
        error(ctx, 503, "server busy: " + maxQueue + " requests already waiting");
    }

    private static String event(String name, JsonObject data) {
        return "event: " + name + "\ndata: " + data.encode() + "\n\n";
    }

    private static String stopReason(Generation g) {
        return g.finishReason().equals("stop") ? "end_turn" : "max_tokens";
    }

    /** Writes one generation as llama.cpp's Anthropic formatters do (see the class comment). */
    private final class Answer implements TokenSink {
        private final RoutingContext ctx;
        private final Ask ask;
        private final ResponseStream out;

        Answer(RoutingContext ctx, Ask ask) {
            this.ctx = ctx;
            this.ask = ask;
            this.out = new ResponseStream(ctx, "text/event-stream");
        }

        @Override
        public void token(Generation g, String token) {
            if (!ask.stream()) {
                return;
            }
            String delta = event("content_block_delta", new JsonObject()
                    .put("type", "content_block_delta")
                    .put("index", 0)
                    .put("delta", new JsonObject().put("type", "text_delta").put("text", token)));
            if (g.sent() == 1) {
                out.write(messageStart(g) + event("content_block_start", new JsonObject()
                        .put("type", "content_block_start")
                        .put("index", 0)
                        .put("content_block", new JsonObject().put("type", "text").put("text", ""))) + delta);
            } else {
                out.write(delta);
            }
        }

        @Override
        public void finish(Generation g) {
            requests.usageReported(ask.promptTokens(), g.sent());
            if (!ask.stream()) {
                JsonArray content = new JsonArray();
                if (g.sent() > 0) {
                    content.add(new JsonObject().put("type", "text").put("text", g.text()));
                }
                Requests.json(ctx, 200, message(g, content, stopReason(g), g.sent()));
                return;
            }
            StringBuilder end = new StringBuilder();
            if (g.sent() == 0) {
                out.write(messageStart(g)); // the headers go out with a first piece
            } else {
                end.append(event("content_block_stop", new JsonObject().put("type", "content_block_stop")
                        .put("index", 0)));
            }
            end.append(event("message_delta", new JsonObject()
                    .put("type", "message_delta")
                    .put("delta", new JsonObject().put("stop_reason", stopReason(g)).put("stop_sequence", null))
                    .put("usage", new JsonObject().put("output_tokens", g.sent()))));
            end.append(event("message_stop", new JsonObject().put("type", "message_stop")));
            out.end(end.toString());
        }

        @Override
        public void cut(Generation g) {
            out.cut();
        }

        private String messageStart(Generation g) {
            return event("message_start", new JsonObject().put("type", "message_start")
                    .put("message", message(g, new JsonArray(), null, 0)));
        }

        /** Returns a message object in llama.cpp's field order, with {@code outputTokens} so far. */
        private JsonObject message(Generation g, JsonArray content, String stopReason, int outputTokens) {
            return new JsonObject()
                    .put("id", "msg_" + idName + "-" + Long.toHexString(g.number()))
                    .put("type", "message")
                    .put("role", "assistant")
                    .put("content", content)
                    .put("model", ask.model())
                    .put("stop_reason", stopReason)
                    .put("stop_sequence", null)
                    .put("usage", new JsonObject().put("input_tokens", ask.promptTokens())
                            .put("output_tokens", outputTokens));
        }
    }
}
