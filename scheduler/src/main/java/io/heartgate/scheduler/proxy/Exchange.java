package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Carries one client request through the proxy, on its event loop: read the body into a bounded
 * buffer, sniff the model, pick a node, send, and relay the response chunk by chunk with
 * back-pressure.
 *
 * <p>Failure rules: a connect failure, or a reset before the response head, is retried on a node not
 * tried yet, up to {@code retries} times, and never after a response byte reached the client. A
 * connect failure counts toward the node's ejection; nothing else does. A node's overload answer
 * (503, 429) is retried elsewhere while retries remain, else passed through. No response head within
 * the first-byte timeout gives 504 without a retry (the node may still be working on it). A client
 * that hangs up resets the upstream request at once, so the node stops generating, and is counted
 * as a cancellation, never as the node's failure. Every write first checks that the client is still
 * there.
 */
final class Exchange {

    private static final Logger log = LoggerFactory.getLogger(Exchange.class);

    /** Headers that describe one connection, not the message (RFC 9110 7.6.1), plus ones we set. */
    private static final List<CharSequence> HOP_BY_HOP = List.of(HttpHeaders.CONNECTION, HttpHeaders.KEEP_ALIVE,
            HttpHeaders.PROXY_AUTHENTICATE, HttpHeaders.PROXY_AUTHORIZATION, HttpHeaders.createOptimized("proxy-connection"),
            HttpHeaders.createOptimized("te"), HttpHeaders.createOptimized("trailer"), HttpHeaders.TRANSFER_ENCODING, HttpHeaders.UPGRADE,
            HttpHeaders.CONTENT_LENGTH, HttpHeaders.EXPECT);
    private static final List<CharSequence> HOP_BY_HOP_RESPONSE = List.of(HttpHeaders.CONNECTION,
            HttpHeaders.KEEP_ALIVE, HttpHeaders.PROXY_AUTHENTICATE, HttpHeaders.createOptimized("proxy-connection"),
            HttpHeaders.createOptimized("te"), HttpHeaders.createOptimized("trailer"), HttpHeaders.TRANSFER_ENCODING, HttpHeaders.UPGRADE);

    private final ProxyVerticle.Shared shared;
    private final HttpClient client;
    private final Timeouts timeouts;
    private final HttpServerRequest req;
    private final HttpServerResponse out;
    private Buffer body;
    private boolean tooLarge;
    private String model;
    private String requestedModel;
    private List<String> tried;
    private int attempts;
    private Node inFlightNode;
    private HttpClientRequest upstream;
    private boolean streaming;
    private boolean done;
    private boolean headArrived;
    private boolean timedOut;
    private long lastChunkMs;
    private long startNanos;
    private long headNanos;
    private String recordedNode;
    private String lastFailure;

    Exchange(ProxyVerticle.Shared shared, HttpClient client, Timeouts timeouts, HttpServerRequest req) {
        this.shared = shared;
        this.client = client;
        this.timeouts = timeouts;
        this.req = req;
        this.out = req.response();
    }

    void start() {
        startNanos = shared.nanoTicker().getAsLong();
        shared.stats().requests.increment();
        out.closeHandler(v -> clientGone());
        out.exceptionHandler(e -> log.debug("Client connection error: {}", e.toString()));
        String length = req.getHeader(HttpHeaders.CONTENT_LENGTH);
        long max = shared.config().maxBodyBytes();
        if (length != null) {
            long declared;
            try {
                declared = Long.parseLong(length.trim());
            } catch (NumberFormatException e) {
                declared = -1;
            }
            if (declared > max) {
                tooLarge();
                return;
            }
            if (declared > 0) {
                body = Buffer.buffer((int) declared);
            }
        }
        req.handler(chunk -> {
            if (tooLarge) {
                return;
            }
            if (body == null) {
                body = Buffer.buffer(chunk.length());
            }
            if ((long) body.length() + chunk.length() > max) {
                tooLarge();
                return;
            }
            body.appendBuffer(chunk);
        });
        req.endHandler(v -> {
            if (!tooLarge) {
                afterBody();
            }
        });
        req.exceptionHandler(e -> log.debug("Client request error: {}", e.toString()));
    }

    private void tooLarge() {
        tooLarge = true;
        body = null;
        shared.stats().errorsTooLarge.increment();
        // The rest of the body is not read: close the connection after answering.
        out.putHeader(HttpHeaders.CONNECTION, "close");
        ProxyErrors.send(out, 413, ProxyErrors.REQUEST_TOO_LARGE,
                "request body is larger than " + shared.config().maxBodyBytes() + " bytes");
    }

    private void afterBody() {
        if (body != null && body.length() > 0 && firstNonSpace(body) == '{') {
            byte[] bytes = body.getBytes();
            model = ModelSniffer.model(bytes, 0, bytes.length);
            requestedModel = model;
        }
        dispatch();
    }

    private static int firstNonSpace(Buffer b) {
        for (int i = 0; i < b.length() && i < 64; i++) {
            byte c = b.getByte(i);
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                return c;
            }
        }
        return -1;
    }

    private void dispatch() {
        if (done) {
            return;
        }
        TableSnapshot snapshot = shared.table().snapshot();
        List<Node> candidates = snapshot.candidates(model);
        if (candidates.isEmpty()) {
            finish();
            if (snapshot.routable().isEmpty()) {
                shared.stats().errorsNoUpstream.increment();
                ProxyErrors.send(out, 503, ProxyErrors.NO_UPSTREAM, "no routable inference node");
            } else {
                shared.stats().errorsModelNotFound.increment();
                ProxyErrors.send(out, 404, ProxyErrors.MODEL_NOT_FOUND,
                        "no routable node serves model '" + displayModel() + "'");
            }
            return;
        }
        List<Node> eligible = eligible(candidates);
        if (eligible.isEmpty()) {
            finish();
            shared.stats().errorsUnreachable.increment();
            ProxyErrors.send(out, 502, ProxyErrors.UPSTREAM_UNREACHABLE,
                    "every node tried failed before answering (" + attempts + " tried; last: " + lastFailure + ")");
            return;
        }
        send(shared.balancer().pick(eligible).orElseThrow());
    }

    /** Returns the candidates not tried yet, leaving out ejected nodes unless all are ejected (panic mode). */
    private List<Node> eligible(List<Node> candidates) {
        boolean anyEjected = shared.health().anyEjected();
        if (tried == null && !anyEjected) {
            return candidates; // the common case: no copy
        }
        List<Node> fresh = new ArrayList<>(candidates.size());
        for (Node n : candidates) {
            if (tried == null || !tried.contains(n.id())) {
                fresh.add(n);
            }
        }
        if (!anyEjected) {
            return fresh;
        }
        List<Node> healthy = new ArrayList<>(fresh.size());
        for (Node n : fresh) {
            if (!shared.health().isEjected(n.id())) {
                healthy.add(n);
            }
        }
        // When every remaining node is ejected, ejection is more likely wrong than every node dead:
        // try them anyway rather than fail every request until the back-off ends.
        return healthy.isEmpty() ? fresh : healthy;
    }

    private void send(Node target) {
        attempts++;
        if (tried == null) {
            tried = new ArrayList<>(shared.config().retries() + 1);
        }
        tried.add(target.id());
        target.inFlight().increment();
        inFlightNode = target;
        Target t = shared.target(target.url());
        RequestOptions options = new RequestOptions()
                .setMethod(req.method())
                .setHost(t.host())
                .setPort(t.port())
                .setSsl(t.ssl())
                .setURI(t.basePath().isEmpty() ? req.uri() : t.basePath() + req.uri())
                .setHeaders(upstreamHeaders(t))
                .setConnectTimeout(shared.config().connectTimeout().toMillis());
        headArrived = false;
        client.request(options).onComplete(ar -> {
            if (ar.failed()) {
                connectFailed(target, ar.cause());
                return;
            }
            HttpClientRequest up = ar.result();
            if (done) {
                up.reset();
                return;
            }
            upstream = up;
            timeouts.awaitHead(this, attempts);
            up.send(body == null ? Buffer.buffer() : body).onComplete(rar -> {
                if (rar.failed()) {
                    failedBeforeHead(target, rar.cause());
                } else {
                    onHead(target, up, rar.result());
                }
            });
        });
    }

    /**
     * Turns the client's headers into the upstream request's, in place (the client's map is not needed
     * afterwards): drops hop-by-hop headers and those the connection header names, sets Host and the
     * X-Forwarded headers. No per-header allocation.
     */
    private MultiMap upstreamHeaders(Target t) {
        MultiMap h = req.headers();
        String originalHost = h.get(HttpHeaders.HOST);
        String priorForwardedFor = h.get("x-forwarded-for");
        String connection = h.get(HttpHeaders.CONNECTION);
        if (connection != null) {
            for (String token : connection.split(",")) {
                h.remove(token.trim());
            }
        }
        for (CharSequence name : HOP_BY_HOP) {
            h.remove(name);
        }
        h.set(HttpHeaders.HOST, t.hostHeader());
        SocketAddress remote = req.remoteAddress();
        String client = remote == null ? "unknown" : remote.hostAddress();
        h.set("x-forwarded-for", priorForwardedFor == null ? client : priorForwardedFor + ", " + client);
        h.set("x-forwarded-proto", req.scheme() == null ? "http" : req.scheme());
        if (originalHost != null) {
            h.set("x-forwarded-host", originalHost);
        }
        return h;
    }

    private void connectFailed(Node target, Throwable cause) {
        release();
        shared.stats().connectFailures.increment();
        lastFailure = target.id() + ": " + describe(cause);
        shared.health().connectFailed(target.id(), target.url(), describe(cause));
        log.debug("Node {} connect failed: {}", target.id(), describe(cause));
        retryOrFail();
    }

    private void failedBeforeHead(Node target, Throwable cause) {
        release();
        if (done) {
            return; // the client left; the reset was ours
        }
        if (timedOut || cause instanceof TimeoutException) {
            finish();
            shared.stats().timeouts.increment();
            log.debug("Node {} did not answer within {} ms", target.id(), shared.config().firstByteTimeout().toMillis());
            ProxyErrors.send(out, 504, ProxyErrors.UPSTREAM_TIMEOUT, "node " + target.id() + " did not answer within "
                    + shared.config().firstByteTimeout().toMillis() + " ms");
            return;
        }
        shared.stats().upstreamResets.increment();
        lastFailure = target.id() + ": " + describe(cause);
        log.debug("Node {} failed before answering: {}", target.id(), describe(cause));
        retryOrFail();
    }

    private void retryOrFail() {
        if (done) {
            return;
        }
        if (attempts <= shared.config().retries()) {
            shared.stats().retries.increment();
            dispatch();
        } else {
            finish();
            shared.stats().errorsUnreachable.increment();
            ProxyErrors.send(out, 502, ProxyErrors.UPSTREAM_UNREACHABLE,
                    "every node tried failed before answering (" + attempts + " tried; last: " + lastFailure + ")");
        }
    }

    private void onHead(Node target, HttpClientRequest up, HttpClientResponse response) {
        headArrived = true;
        headNanos = shared.nanoTicker().getAsLong();
        recordedNode = target.id();
        shared.health().succeeded(target.id());
        if (done) {
            up.reset();
            release();
            return;
        }
        int status = response.statusCode();
        if ((status == 503 || status == 429) && attempts <= shared.config().retries()) {
            // The node is busy, not dead: try another one, and never count it toward ejection.
            shared.stats().overloadAnswers.increment();
            lastFailure = target.id() + ": answered " + status;
            response.body().onComplete(ignored -> {
                release();
                if (!done) {
                    shared.stats().retries.increment();
                    dispatch();
                }
            });
            return;
        }
        relay(target, response);
    }

    private void relay(Node target, HttpClientResponse response) {
        out.setStatusCode(response.statusCode());
        String message = response.statusMessage();
        if (message != null && !message.equals(HttpResponseStatus.valueOf(response.statusCode()).reasonPhrase())) {
            out.setStatusMessage(message); // only a node's own reason phrase: the standard one is cached
        }
        MultiMap headers = out.headers();
        headers.addAll(response.headers());
        for (CharSequence name : HOP_BY_HOP_RESPONSE) {
            headers.remove(name);
        }
        headers.set("x-upstream-node", target.id());
        String type = response.getHeader(HttpHeaders.CONTENT_TYPE);
        streaming = type != null && (type.startsWith("text/event-stream") || type.contains("ndjson"));
        if (response.getHeader(HttpHeaders.CONTENT_LENGTH) == null) {
            out.setChunked(true);
        }
        if (streaming) {
            // Tell an nginx in front of us not to buffer, and caches not to keep it.
            headers.set(HttpHeaders.CACHE_CONTROL, "no-cache");
            headers.set("x-accel-buffering", "no");
            shared.stats().activeStreams.increment();
        }
        lastChunkMs = timeouts.nowMs();
        timeouts.relaying(this);
        response.handler(chunk -> {
            if (done || out.closed()) {
                return;
            }
            lastChunkMs = timeouts.nowMs();
            out.write(chunk);
            if (out.writeQueueFull()) {
                response.pause();
                out.drainHandler(v -> response.resume());
            }
        });
        response.exceptionHandler(e -> {
            // The node broke off mid-response (or went idle too long): bytes already reached the
            // client, so no retry; cut the client's response so it sees the truncation.
            if (done) {
                return;
            }
            finish();
            release();
            log.debug("Node {} broke off a response: {}", target.id(), describe(e));
            if (!out.closed() && !out.ended()) {
                out.reset();
            }
        });
        response.endHandler(v -> {
            if (done) {
                return;
            }
            finish();
            release();
            if (!out.closed() && !out.ended()) {
                out.end();
            }
        });
    }

    private void clientGone() {
        if (done) {
            return;
        }
        finish();
        shared.stats().clientCancellations.increment();
        HttpClientRequest up = upstream;
        if (up != null) {
            // Closing the upstream stream makes the node stop generating for nobody.
            up.reset();
        }
        release();
    }

    /** Returns whether attempt {@code attempt} is still waiting for its response head. */
    boolean waitingForHead(int attempt) {
        return !done && !headArrived && attempts == attempt && upstream != null;
    }

    /** Returns when the last chunk was relayed (the coarse clock of {@link Timeouts}). */
    long lastChunkMs() {
        return lastChunkMs;
    }

    /** Gives up on a node that sent no response head within the first-byte timeout. */
    void firstByteTimedOut() {
        timedOut = true;
        HttpClientRequest up = upstream;
        if (up != null) {
            up.reset(); // fails the pending send; failedBeforeHead answers 504
        }
    }

    /** Cuts a response whose node went silent for longer than the idle timeout. */
    void idleTimedOut() {
        if (done) {
            return;
        }
        shared.stats().timeouts.increment();
        log.debug("Node {} sent nothing for {} ms mid-response; cutting it", inFlightNode == null ? "?" : inFlightNode.id(),
                shared.config().idleTimeout().toMillis());
        finish();
        release();
        HttpClientRequest up = upstream;
        if (up != null) {
            up.reset();
        }
        if (!out.closed() && !out.ended()) {
            out.reset();
        }
    }

    private void finish() {
        if (!done) {
            done = true;
            timeouts.done(this);
            if (recordedNode != null) {
                long now = shared.nanoTicker().getAsLong();
                // A response cut short (client gone, node broke off) is recorded with status class "none".
                int status = out.ended() || !out.closed() ? out.getStatusCode() : 0;
                shared.metrics().record(recordedNode, status, metricModel(), now - startNanos, headNanos - startNanos);
            }
            if (streaming) {
                shared.stats().activeStreams.decrement();
            }
        }
    }

    /** Gives back the in-flight count taken for the current attempt; idempotent. */
    private void release() {
        Node n = inFlightNode;
        if (n != null) {
            inFlightNode = null;
            n.inFlight().decrement();
        }
    }

    /** Returns the model as a metric label: only models some node serves, so the label set stays bounded. */
    private String metricModel() {
        if (model == null) {
            return null;
        }
        return shared.table().snapshot().candidates(model).isEmpty() ? "other" : model;
    }

    private String displayModel() {
        return requestedModel == null ? "" : requestedModel.endsWith(":latest")
                ? requestedModel.substring(0, requestedModel.length() - ":latest".length()) : requestedModel;
    }

    private static String describe(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
