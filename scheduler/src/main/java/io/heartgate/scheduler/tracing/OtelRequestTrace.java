package io.heartgate.scheduler.tracing;

import static io.opentelemetry.api.common.AttributeKey.booleanKey;
import static io.opentelemetry.api.common.AttributeKey.doubleKey;
import static io.opentelemetry.api.common.AttributeKey.longKey;
import static io.opentelemetry.api.common.AttributeKey.stringKey;

import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.time.Ticker;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * One request's spans, named and attributed after the OpenTelemetry GenAI and HTTP semantic
 * conventions: the server span ({@code POST /v1/chat/completions}) for the whole request, and per
 * attempt a client span ({@code chat MODEL}) on the node it went to, so retries and moved streams
 * show as siblings. Attributes the conventions do not name are under {@code heartgate.*}.
 */
final class OtelRequestTrace implements RequestTrace {

    static final AttributeKey<String> OPERATION = stringKey("gen_ai.operation.name");
    static final AttributeKey<String> REQUEST_MODEL = stringKey("gen_ai.request.model");
    static final AttributeKey<String> RESPONSE_MODEL = stringKey("gen_ai.response.model");
    static final AttributeKey<String> PROVIDER = stringKey("gen_ai.provider.name");
    static final AttributeKey<Long> INPUT_TOKENS = longKey("gen_ai.usage.input_tokens");
    static final AttributeKey<Long> OUTPUT_TOKENS = longKey("gen_ai.usage.output_tokens");
    static final AttributeKey<Double> FIRST_CHUNK = doubleKey("gen_ai.response.time_to_first_chunk");
    static final AttributeKey<String> SERVER_ADDRESS = stringKey("server.address");
    static final AttributeKey<Long> SERVER_PORT = longKey("server.port");
    static final AttributeKey<String> METHOD = stringKey("http.request.method");
    static final AttributeKey<String> ROUTE = stringKey("http.route");
    static final AttributeKey<Long> STATUS = longKey("http.response.status_code");
    static final AttributeKey<String> ERROR_TYPE = stringKey("error.type");
    static final AttributeKey<String> NODE = stringKey("heartgate.node.id");
    static final AttributeKey<String> API_KEY = stringKey("heartgate.api_key.name");
    static final AttributeKey<Long> ATTEMPT = longKey("heartgate.attempt");
    static final AttributeKey<Long> ATTEMPTS = longKey("heartgate.attempts");
    static final AttributeKey<Boolean> MOVED = booleanKey("heartgate.stream.moved");
    static final AttributeKey<Double> QUEUE_WAIT = doubleKey("heartgate.queue.wait_seconds");
    /** The event a wait in the gateway queue becomes, when it ends. */
    static final String QUEUE_EVENT = "heartgate.queue.wait";

    private final Tracer tracer;
    private final Ticker ticker;
    private final long startNanos;
    private final Span span;
    private final Context context;
    private final String operation;
    private final String model;
    private final String attemptName;
    private Span attempt;
    private int attempts;
    private long queuedAt = -1;
    private boolean chunked;
    private boolean cut;
    private boolean done;

    OtelRequestTrace(OtelTracing tracing, Context parent, Endpoint endpoint, String method, String model, String caller,
                     long startNanos) {
        this.tracer = tracing.tracer();
        this.ticker = tracing.ticker();
        this.startNanos = startNanos;
        this.operation = GenAiOperation.of(endpoint);
        this.model = model;
        String route = endpoint == Endpoint.OTHER ? null
                : endpoint.path().endsWith("/") ? endpoint.path() + "{id}" : endpoint.path(); // /v1/responses/{id}
        this.attemptName = operation == null ? method : model == null ? operation : operation + " " + model;
        SpanBuilder b = tracer.spanBuilder(route == null ? method : method + " " + route).setParent(parent)
                .setSpanKind(SpanKind.SERVER).setStartTimestamp(tracing.epochNanos(startNanos), TimeUnit.NANOSECONDS)
                .setAttribute(METHOD, method);
        if (route != null) {
            b.setAttribute(ROUTE, route);
        }
        common(b);
        if (caller != null) {
            b.setAttribute(API_KEY, caller);
        }
        this.span = b.startSpan();
        this.context = parent.with(span);
    }

    private void common(SpanBuilder b) {
        if (operation != null) {
            b.setAttribute(OPERATION, operation);
        }
        if (model != null) {
            b.setAttribute(REQUEST_MODEL, model);
        }
    }

    @Override
    public String attempt(Node node) {
        dequeued();
        // Still open: the last attempt was neither answered nor failed, as when its node's server
        // could not continue a moved stream and it was never sent.
        endAttempt("not_continuable");
        SpanBuilder b = tracer.spanBuilder(attemptName).setParent(context).setSpanKind(SpanKind.CLIENT)
                .setAttribute(NODE, node.id()).setAttribute(ATTEMPT, ++attempts);
        common(b);
        String[] address = hostAndPort(node.url());
        b.setAttribute(SERVER_ADDRESS, address[0]).setAttribute(SERVER_PORT, Long.parseLong(address[1]));
        if (chunked) { // the client has part of the answer: the stream moves to this node
            b.setAttribute(MOVED, true);
        }
        String backend = node.heartbeat().backend();
        if (backend != null) {
            b.setAttribute(PROVIDER, backend);
        }
        attempt = b.startSpan();
        SpanContext sc = attempt.getSpanContext();
        return sc.isValid() ? "00-" + sc.getTraceId() + "-" + sc.getSpanId() + "-" + sc.getTraceFlags().asHex() : null;
    }

    @Override
    public void answered(int status) {
        if (attempt != null) {
            attempt.setAttribute(STATUS, status);
        }
    }

    @Override
    public void cut() {
        cut = true;
        endAttempt("stream_cut");
    }

    @Override
    public void failed(String failure, boolean resent) {
        if (attempt == null) {
            return;
        }
        String type = failure.toLowerCase(Locale.ROOT);
        if (resent) {
            attempt.addEvent("heartgate.resent", Attributes.of(ERROR_TYPE, type));
        } else {
            endAttempt(type);
        }
    }

    @Override
    public void dispatched(boolean waiting) {
        if (waiting) {
            queuedAt = ticker.nanos();
        }
    }

    private void dequeued() {
        if (queuedAt >= 0) {
            span.addEvent(QUEUE_EVENT, Attributes.of(QUEUE_WAIT, (ticker.nanos() - queuedAt) / 1e9));
            queuedAt = -1;
        }
    }

    @Override
    public void firstChunk() {
        if (!chunked) {
            chunked = true;
            span.setAttribute(FIRST_CHUNK, (ticker.nanos() - startNanos) / 1e9);
        }
    }

    @Override
    public void usage(long input, long output) {
        span.setAttribute(INPUT_TOKENS, input);
        span.setAttribute(OUTPUT_TOKENS, output);
        if (attempt != null) {
            attempt.setAttribute(INPUT_TOKENS, input);
            attempt.setAttribute(OUTPUT_TOKENS, output);
        }
    }

    @Override
    public void ended(int status, Node node) {
        if (done) {
            return;
        }
        done = true;
        dequeued();
        String error = status == 0 ? "client_gone" : cut ? "stream_cut"
                : status >= 500 ? Integer.toString(status) : null;
        endAttempt(error);
        span.setAttribute(ATTEMPTS, attempts);
        if (status > 0) {
            span.setAttribute(STATUS, status);
        }
        if (node != null) {
            span.setAttribute(NODE, node.id());
            String[] address = hostAndPort(node.url());
            span.setAttribute(SERVER_ADDRESS, address[0]);
            span.setAttribute(SERVER_PORT, Long.parseLong(address[1]));
            if (model != null && node.models().contains(ModelNames.normalize(model))) {
                span.setAttribute(RESPONSE_MODEL, model);
            }
        }
        if (error != null) {
            span.setAttribute(ERROR_TYPE, error);
            span.setStatus(StatusCode.ERROR);
        }
        span.end();
    }

    /**
     * Returns the host (brackets kept off an IPv6 literal) and port of a node's URL, which the
     * heartbeat rules accepted: {@code http} or {@code https}, any host name (underscores too).
     */
    static String[] hostAndPort(String url) {
        int start = url.indexOf("://") + 3;
        int end = url.length();
        for (int i = start; i < url.length(); i++) {
            char c = url.charAt(i);
            if (c == '/' || c == '?' || c == '#') {
                end = i;
                break;
            }
        }
        String authority = url.substring(start, end);
        int colon = authority.lastIndexOf(':');
        boolean portGiven = colon > authority.lastIndexOf(']');
        String host = portGiven ? authority.substring(0, colon) : authority;
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        String port = portGiven ? authority.substring(colon + 1)
                : url.regionMatches(true, 0, "https:", 0, 6) ? "443" : "80";
        return new String[] {host, port};
    }

    private void endAttempt(String error) {
        if (attempt != null) {
            if (error != null) {
                attempt.setAttribute(ERROR_TYPE, error);
                attempt.setStatus(StatusCode.ERROR);
            }
            attempt.end();
            attempt = null;
        }
    }
}
