package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Carries one client request through the proxy, on its event loop: the body is already in a bounded
 * buffer ({@link RequestAggregator}); sniff the model, pick a node, send on a pooled connection,
 * and relay the response chunk by chunk with back-pressure, flushing after each read from the node
 * so a token leaves as soon as it arrived.
 *
 * <p>Failure rules: a connect failure, or a reset before the response head, is retried on a node not
 * tried yet, up to {@code retries} times, and never after a response byte reached the client. A
 * connect failure counts toward the node's ejection; nothing else does. A node's overload answer
 * (503, 429) is retried elsewhere while retries remain, else passed through. No response head within
 * the first-byte timeout gives 504 without a retry (the node may still be working on it). A client
 * that hangs up closes the upstream connection at once, so the node stops generating, and is counted
 * as a cancellation, never as the node's failure. Nothing is written to a client that is gone.
 */
final class Exchange {

    private static final Logger log = LoggerFactory.getLogger(Exchange.class);

    /** Request headers that describe one connection, not the message (RFC 9110 7.6.1). */
    private static final AsciiString[] HOP_BY_HOP = {HttpHeaderNames.CONNECTION, HttpHeaderNames.KEEP_ALIVE,
            HttpHeaderNames.PROXY_AUTHENTICATE, HttpHeaderNames.PROXY_AUTHORIZATION, AsciiString.cached("proxy-connection"),
            HttpHeaderNames.TE, HttpHeaderNames.TRAILER, HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderNames.UPGRADE,
            HttpHeaderNames.EXPECT};
    /** The same for responses; transfer-encoding is decided again for the client's side. */
    private static final AsciiString[] HOP_BY_HOP_RESPONSE = {HttpHeaderNames.CONNECTION, HttpHeaderNames.KEEP_ALIVE,
            HttpHeaderNames.PROXY_AUTHENTICATE, AsciiString.cached("proxy-connection"), HttpHeaderNames.TE,
            HttpHeaderNames.TRAILER, HttpHeaderNames.UPGRADE};
    private static final AsciiString X_FORWARDED_FOR = AsciiString.cached("x-forwarded-for");
    private static final AsciiString X_FORWARDED_PROTO = AsciiString.cached("x-forwarded-proto");
    private static final AsciiString X_FORWARDED_HOST = AsciiString.cached("x-forwarded-host");
    private static final AsciiString X_UPSTREAM_NODE = AsciiString.cached("x-upstream-node");
    private static final AsciiString X_ACCEL_BUFFERING = AsciiString.cached("x-accel-buffering");
    private static final AsciiString HTTP = AsciiString.cached("http");
    private static final AsciiString NO = AsciiString.cached("no");

    /** This exchange's neighbours in its loop's list of responses being relayed ({@link Timeouts}). */
    Exchange relayPrev;
    Exchange relayNext;
    boolean relayLinked;
    private final LoopState loop;
    private final ProxyServer.Shared shared;
    private final ClientConnection conn;
    private final Channel client;
    private final FullHttpRequest req;
    private final boolean clientHttp10;
    /** Whether the client's connection stays open after this response (its request's keep-alive, not draining). */
    private boolean keepClient;
    private final long startNanos;
    private String model;
    private boolean modelServed;
    private List<String> tried;
    private int attempts;
    private Node node;
    private Node inFlightNode;
    private Target target;
    private Channel upstream;
    private UpstreamConnection upstreamHandler;
    private boolean upstreamKeepAlive;
    private boolean headArrived;
    private boolean discarding;
    private boolean informational;
    private boolean relaying;
    private boolean unflushed;
    private boolean streaming;
    private boolean timedOut;
    private boolean reused;
    private boolean staleRetried;
    private boolean done;
    private boolean released;
    private int status;
    private long lastChunkMs;
    private long headNanos;
    private String recordedNode;
    private String lastFailure;

    Exchange(LoopState loop, ClientConnection conn, FullHttpRequest req) {
        this.loop = loop;
        this.shared = loop.shared();
        this.conn = conn;
        this.client = conn.ctx().channel();
        this.req = req;
        this.clientHttp10 = req.protocolVersion() == HttpVersion.HTTP_1_0;
        this.keepClient = HttpUtil.isKeepAlive(req);
        this.startNanos = shared.nanoTicker().getAsLong();
    }

    void start() {
        shared.stats().requests.increment();
        model = ModelSniffer.model(req.content());
        prepareHeaders();
        dispatch();
    }

    /**
     * Turns the client's headers into the upstream request's, in place (the client's are not needed
     * afterwards): drops hop-by-hop headers and those the connection header names, sets the
     * X-Forwarded headers. The body's length is the aggregated one, so content-length stays.
     */
    private void prepareHeaders() {
        HttpHeaders h = req.headers();
        String originalHost = h.get(HttpHeaderNames.HOST);
        String priorForwardedFor = h.get(X_FORWARDED_FOR);
        removeHopByHop(h, HOP_BY_HOP);
        String ip = conn.remoteIp();
        h.set(X_FORWARDED_FOR, priorForwardedFor == null ? ip : priorForwardedFor + ", " + ip);
        h.set(X_FORWARDED_PROTO, HTTP);
        if (originalHost != null) {
            h.set(X_FORWARDED_HOST, originalHost);
        }
    }

    /**
     * Removes the headers the Connection header names, then {@code names}. The message's framing
     * headers are never removed by a Connection token: the framing is this hop's to decide.
     */
    private static void removeHopByHop(HttpHeaders h, AsciiString[] names) {
        String connection = h.get(HttpHeaderNames.CONNECTION);
        if (connection != null) {
            for (String token : connection.split(",")) {
                String name = token.trim();
                if (!name.equalsIgnoreCase("content-length") && !name.equalsIgnoreCase("transfer-encoding")) {
                    h.remove(name);
                }
            }
        }
        for (AsciiString name : names) {
            h.remove(name);
        }
    }

    private void dispatch() {
        if (done) {
            return;
        }
        TableSnapshot snapshot = shared.table().snapshot();
        List<Node> candidates = snapshot.candidates(model);
        modelServed = !candidates.isEmpty();
        if (candidates.isEmpty()) {
            if (snapshot.routable().isEmpty()) {
                shared.stats().errorsNoUpstream.increment();
                fail(503, ProxyErrors.NO_UPSTREAM, "no routable inference node");
            } else {
                shared.stats().errorsModelNotFound.increment();
                fail(404, ProxyErrors.MODEL_NOT_FOUND, "no routable node serves model '" + displayModel() + "'");
            }
            return;
        }
        List<Node> eligible = eligible(candidates);
        if (eligible.isEmpty()) {
            failUnreachable();
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

    private void send(Node n) {
        attempts++;
        if (tried == null) {
            tried = new ArrayList<>(shared.config().retries() + 1);
        }
        tried.add(n.id());
        n.inFlight().increment();
        node = n;
        inFlightNode = n;
        target = shared.target(n.url());
        open(true);
    }

    /** Sends the current attempt on a pooled connection when {@code pooledOk} and one is idle, else on a new one. */
    private void open(boolean pooledOk) {
        Channel pooled = pooledOk ? loop.acquire(target) : null;
        reused = pooled != null;
        if (pooled != null) {
            write(pooled);
            return;
        }
        Node n = node;
        Target t = target;
        int attempt = attempts;
        loop.connect(t).addListener((ChannelFuture f) -> connected(n, t, attempt, f));
    }

    private void connected(Node n, Target t, int attempt, ChannelFuture f) {
        if (!f.isSuccess()) {
            if (attempt == attempts && !done) {
                connectFailed(n, f.cause());
            }
            return;
        }
        if (done || attempt != attempts) {
            loop.release(t, f.channel()); // nobody needs it now; keep it for the next request
            return;
        }
        write(f.channel());
    }

    private void write(Channel ch) {
        upstream = ch;
        upstreamHandler = (UpstreamConnection) ch.pipeline().last();
        upstreamHandler.attach(this);
        headArrived = false;
        discarding = false;
        req.headers().set(HttpHeaderNames.HOST, target.hostHeader());
        String uri = target.basePath().isEmpty() ? req.uri() : target.basePath() + req.uri();
        loop.timeouts().awaitHead(this, attempts);
        // A new message per attempt over the same headers and a duplicate of the body, so a retry
        // sends the body again from its start.
        // No promise per write: a failed write reaches UpstreamConnection.exceptionCaught, which closes.
        ch.writeAndFlush(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, req.method(), uri,
                req.content().retainedDuplicate(), req.headers(), req.trailingHeaders()), ch.voidPromise());
    }

    private void connectFailed(Node n, Throwable cause) {
        release();
        shared.stats().connectFailures.increment();
        lastFailure = n.id() + ": " + describe(cause);
        shared.health().connectFailed(n.id(), n.url(), describe(cause));
        log.debug("Node {} connect failed: {}", n.id(), describe(cause));
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
            failUnreachable();
        }
    }

    private void failUnreachable() {
        shared.stats().errorsUnreachable.increment();
        fail(502, ProxyErrors.UPSTREAM_UNREACHABLE,
                "every node tried failed before answering (" + attempts + " tried; last: " + lastFailure + ")");
    }

    /** What the node sent: a response head, body chunks, the end. Ownership of {@code msg} passes here. */
    void upstreamRead(Object msg) {
        if (msg instanceof HttpResponse response) {
            if (response.decoderResult().isFailure() || headArrived || informational) {
                ReferenceCountUtil.release(msg);
                upstream.close(); // unreadable answer: treated as a reset
                return;
            }
            int code = response.status().code();
            if (code >= 100 && code < 200) {
                informational = true; // 100 or 103: the real head follows; this one ends with an empty last chunk
                if (!(msg instanceof HttpContent)) {
                    return;
                }
            } else {
                onHead(response);
            }
        }
        if (msg instanceof HttpContent content) {
            if (informational) {
                content.release();
                informational = !(content instanceof LastHttpContent);
                return;
            }
            onContent(content);
        }
    }

    private void onHead(HttpResponse response) {
        headArrived = true;
        headNanos = shared.nanoTicker().getAsLong();
        recordedNode = node.id();
        shared.health().succeeded(node.id());
        upstreamKeepAlive = HttpUtil.isKeepAlive(response);
        int code = response.status().code();
        if ((code == 503 || code == 429) && attempts <= shared.config().retries()) {
            // The node is busy, not dead: try another one, and never count it toward ejection.
            shared.stats().overloadAnswers.increment();
            lastFailure = node.id() + ": answered " + code;
            discarding = true;
            return;
        }
        relayHead(response);
    }

    private void relayHead(HttpResponse response) {
        relaying = true;
        status = response.status().code();
        response.setProtocolVersion(HttpVersion.HTTP_1_1);
        HttpHeaders h = response.headers();
        removeHopByHop(h, HOP_BY_HOP_RESPONSE);
        if (!h.contains(HttpHeaderNames.CONTENT_LENGTH) && !HttpUtil.isTransferEncodingChunked(response)
                && req.method() != HttpMethod.HEAD && status != 204 && status != 304 && status >= 200) {
            // A body that ends when the node closes: chunk it, so the client connection stays usable.
            HttpUtil.setTransferEncodingChunked(response, true);
        }
        if (clientHttp10 && HttpUtil.isTransferEncodingChunked(response)) {
            h.remove(HttpHeaderNames.TRANSFER_ENCODING); // HTTP/1.0 has no chunks: end by closing
            keepClient = false;
        }
        h.set(X_UPSTREAM_NODE, node.id());
        String type = h.get(HttpHeaderNames.CONTENT_TYPE);
        streaming = type != null && (type.startsWith("text/event-stream") || type.contains("ndjson"));
        if (streaming) {
            // Tell an nginx in front of us not to buffer, and caches not to keep it.
            h.set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
            h.set(X_ACCEL_BUFFERING, NO);
            shared.stats().activeStreams.increment();
        }
        keepClient &= !conn.draining();
        if (!keepClient) {
            h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (clientHttp10) {
            h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
        lastChunkMs = loop.timeouts().nowMs();
        loop.timeouts().relaying(this);
        client.write(response, client.voidPromise()); // a failed write reaches ClientConnection.exceptionCaught
        unflushed = true;
    }

    private void onContent(HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        if (discarding) {
            content.release();
            if (last) {
                endOfUpstreamResponse();
                if (!done) {
                    shared.stats().retries.increment();
                    dispatch();
                }
            }
            return;
        }
        if (done || !relaying) {
            content.release();
            return;
        }
        lastChunkMs = loop.timeouts().nowMs();
        if (!last) {
            client.write(content, client.voidPromise());
            unflushed = true;
            if (!client.isWritable()) {
                upstream.config().setAutoRead(false); // resumed by clientWritabilityChanged
            }
            return;
        }
        unflushed = false;
        ChannelFuture written = client.writeAndFlush(content);
        endOfUpstreamResponse();
        finish(status);
        conn.exchangeDone(this, written, !keepClient);
    }

    /** The node's response ended: its connection goes back to the pool, or is closed. */
    private void endOfUpstreamResponse() {
        release();
        Channel ch = upstream;
        upstreamHandler.detach();
        upstream = null;
        if (!ch.config().isAutoRead()) {
            ch.config().setAutoRead(true);
        }
        if (upstreamKeepAlive) {
            loop.release(target, ch);
        } else {
            ch.close();
        }
    }

    /** End of one read from the node: one flush for whatever that read gave. */
    void upstreamReadComplete() {
        if (unflushed) {
            unflushed = false;
            client.flush();
        }
    }

    /** The node's connection closed while this exchange used it. */
    void upstreamClosed(Throwable cause) {
        upstream = null;
        if (done) {
            return;
        }
        if (!headArrived || discarding) {
            failedBeforeHead(cause);
            return;
        }
        // The node broke off mid-response: bytes already reached the client, so no retry; cut the
        // client's connection so it sees the truncation.
        release();
        log.debug("Node {} broke off a response: {}", node.id(), cause == null ? "connection closed" : describe(cause));
        finish(status);
        client.close();
        conn.exchangeDone(this, null, true);
    }

    private void failedBeforeHead(Throwable cause) {
        if (reused && !timedOut && !discarding && !staleRetried) {
            // A pooled connection the node closed as we reused it (its keep-alive timeout raced our
            // request): the node never saw the request. Once per request, send it again to the same
            // node on a new connection; neither the node's failure nor a retry.
            staleRetried = true;
            shared.stats().staleConnections.increment();
            log.debug("Node {} closed a pooled connection as it was reused ({}); sending again on a new one", node.id(),
                    cause == null ? "closed" : describe(cause));
            open(false);
            return;
        }
        release();
        if (timedOut) {
            shared.stats().timeouts.increment();
            log.debug("Node {} did not answer within {} ms", node.id(), shared.config().firstByteTimeout().toMillis());
            fail(504, ProxyErrors.UPSTREAM_TIMEOUT, "node " + node.id() + " did not answer within "
                    + shared.config().firstByteTimeout().toMillis() + " ms");
            return;
        }
        if (!discarding) {
            shared.stats().upstreamResets.increment();
            lastFailure = node.id() + ": " + (cause == null ? "connection closed before the response" : describe(cause));
            log.debug("Node {} failed before answering: {}", node.id(), lastFailure);
        }
        retryOrFail();
    }

    /** Answers the client with the proxy's own error and ends the exchange. */
    private void fail(int code, String type, String message) {
        finish(code);
        boolean close = !keepClient || conn.draining();
        ChannelFuture written = ProxyErrors.send(client, code, type, message, close);
        conn.exchangeDone(this, written, close);
    }

    /** The client's socket buffer filled or drained: pause or resume reading from the node. */
    void clientWritabilityChanged(boolean writable) {
        Channel up = upstream;
        if (relaying && up != null) {
            up.config().setAutoRead(writable);
        }
    }

    /** The client hung up: stop the node's work at once. Never the node's failure. */
    void clientGone() {
        if (done) {
            return;
        }
        finish(0);
        shared.stats().clientCancellations.increment();
        closeUpstream();
        release();
    }

    private void closeUpstream() {
        Channel up = upstream;
        upstream = null;
        if (up != null) {
            upstreamHandler.detach();
            up.close(); // the node sees the connection go and stops generating
        }
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
        Channel up = upstream;
        if (up != null) {
            up.close(); // upstreamClosed answers 504
        }
    }

    /** Cuts a response whose node went silent for longer than the idle timeout. */
    void idleTimedOut() {
        if (done) {
            return;
        }
        shared.stats().timeouts.increment();
        log.debug("Node {} sent nothing for {} ms mid-response; cutting it", node.id(),
                shared.config().idleTimeout().toMillis());
        finish(status);
        release();
        closeUpstream();
        client.close();
        conn.exchangeDone(this, null, true);
    }

    private void finish(int metricStatus) {
        if (done) {
            return;
        }
        done = true;
        if (relaying) {
            loop.timeouts().done(this);
        }
        if (!released) {
            released = true;
            req.release();
        }
        if (recordedNode != null) {
            long now = shared.nanoTicker().getAsLong();
            // A response cut short (client gone) is recorded with status class "none".
            shared.metrics().record(recordedNode, metricStatus, metricModel(), now - startNanos, headNanos - startNanos);
        }
        if (streaming) {
            shared.stats().activeStreams.decrement();
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

    /**
     * Returns the model as a metric label: only models some node served when the request was
     * routed, so the label set stays bounded.
     */
    private String metricModel() {
        if (model == null) {
            return null;
        }
        return modelServed ? model : "other";
    }

    private String displayModel() {
        return model == null ? "" : model.endsWith(":latest") ? model.substring(0, model.length() - ":latest".length()) : model;
    }

    private static String describe(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
