package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.stage.Answer;
import io.heartgate.scheduler.proxy.stage.Stage;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection: takes its requests in order, reads each one's facts once, runs it through
 * the stages and then the relay ({@link Exchange}), one request at a time, and tells the exchange
 * when the client hangs up or its socket buffer fills or drains. A pipelining client's next
 * requests wait, already read, until the current response is written.
 * Past a few, or past {@link #MAX_QUEUED_BYTES} of bodies, reading stops.
 * A connection idle between requests for the keep-alive timeout is closed, so clients that never
 * hang up do not hold sockets forever; a response in progress, however long, keeps it open. A
 * request whose head is not complete within the header timeout of its first byte (slowloris), or
 * whose body is not complete within the body timeout of its head (a trickled body), gets 408
 * {@code request_timeout} and the connection closes. One check per connection every quarter of the
 * shortest of those timeouts, not a timer per request. Event-loop confined.
 */
final class ClientConnection extends ChannelInboundHandlerAdapter {

    private static final Logger log = LoggerFactory.getLogger(ClientConnection.class);
    private static final int MAX_QUEUED = 16;
    /** Bodies of pipelined requests held before reading stops: the current request's own is on top. */
    static final long MAX_QUEUED_BYTES = 1024 * 1024;
    /** The longest an error answer that closes the connection may take to be written. */
    private static final long CLOSE_AFTER_ERROR_MS = 5000;

    private final Relay relay;
    private final List<Stage> stages;
    private final RequestFactsReader facts;
    private final boolean readsHeaders;
    private final ProxyCounters counters;
    private final LongSupplier nowMs;
    private final long keepAliveMs;
    private final long headerTimeoutMs;
    private final long bodyTimeoutMs;
    private final long checkEveryMs;
    private final BooleanSupplier draining;
    private ChannelHandlerContext ctx;
    /** The connection's codec, which knows what of a request is being read; null without one (tests). */
    private ServerCodec codec;
    private long queuedBytes;
    /** When the connection last became free to read its next request: a pipelined one is timed from then. */
    private long turnStartMs;
    /** When the client last sent bytes or a response ended (the loop's coarse clock). */
    private long lastActivityMs;
    private String remoteIp = "unknown";
    private StagedCall staging;
    /** The end of the current response's body, for usage accounting. */
    private final AnswerUsage usage = new AnswerUsage();
    private Exchange current;
    private ArrayDeque<FullHttpRequest> queued;
    /** Set once a request could not be framed: whatever follows on this connection is not read as requests. */
    private boolean closing;

    /**
     * @param nowMs the loop's coarse clock, in ms
     * @param timeouts keep-alive, header and body timeouts, in ms
     * @param draining whether the proxy is shutting down: every connection closes after its current response
     */
    ClientConnection(Relay relay, List<Stage> stages, RequestFactsReader facts, ProxyCounters counters,
                     LongSupplier nowMs, ClientTimeouts timeouts, BooleanSupplier draining) {
        this.relay = relay;
        this.stages = stages;
        this.facts = facts;
        this.readsHeaders = facts.readsHeaders();
        this.counters = counters;
        this.nowMs = nowMs;
        this.keepAliveMs = timeouts.keepAliveMs();
        this.headerTimeoutMs = timeouts.headerMs();
        this.bodyTimeoutMs = timeouts.bodyMs();
        this.checkEveryMs = timeouts.checkEveryMs();
        this.draining = draining;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.codec = ctx.pipeline().get(ServerCodec.class);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        if (ctx.channel().remoteAddress() instanceof InetSocketAddress a && a.getAddress() != null) {
            remoteIp = a.getAddress().getHostAddress();
        }
        lastActivityMs = nowMs.getAsLong();
        // One timer per connection per check period, not per request: requests only move
        // lastActivityMs and the codec's phase, and the check reschedules itself.
        ctx.executor().schedule(this::check, Math.min(checkEveryMs, keepAliveMs), TimeUnit.MILLISECONDS);
        ctx.fireChannelActive();
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        lastActivityMs = nowMs.getAsLong();
        ctx.fireChannelReadComplete();
    }

    private boolean busy() {
        return current != null || staging != null;
    }

    /**
     * Answers 408 to a request whose head or body is overdue, or closes the connection if it has
     * been idle between requests for the keep-alive timeout; then schedules the next check. A
     * pipelined request being read while an earlier one is answered is timed once it is its turn.
     */
    private void check() {
        if (!ctx.channel().isActive() || closing) {
            return;
        }
        long now = nowMs.getAsLong();
        boolean busy = busy() || (queued != null && !queued.isEmpty());
        ServerCodec.Receiving receiving = codec == null ? ServerCodec.Receiving.NOTHING : codec.receiving();
        if (!busy && receiving != ServerCodec.Receiving.NOTHING) {
            boolean head = receiving == ServerCodec.Receiving.HEAD;
            long tookMs = now - Math.max(codec.receivingSinceMs(), turnStartMs);
            if (tookMs >= (head ? headerTimeoutMs : bodyTimeoutMs)) {
                requestTimedOut(head, tookMs);
                return;
            }
        }
        long idleMs = now - lastActivityMs;
        if (!busy && receiving == ServerCodec.Receiving.NOTHING && idleMs >= keepAliveMs) {
            log.debug("Client {} idle for {} ms between requests; closing its connection", remoteIp, idleMs);
            ctx.close();
            return;
        }
        long next = busy ? checkEveryMs : Math.min(checkEveryMs, Math.max(1, keepAliveMs - idleMs));
        ctx.executor().schedule(this::check, next, TimeUnit.MILLISECONDS);
    }

    private void requestTimedOut(boolean head, long tookMs) {
        closing = true;
        ctx.channel().config().setAutoRead(false);
        counters.error(ErrorType.REQUEST_TIMEOUT);
        String what = head ? "request head" : "request body";
        long limitMs = head ? headerTimeoutMs : bodyTimeoutMs;
        log.debug("Client {}: {} not complete after {} ms; answering 408", remoteIp, what, tookMs);
        ChannelFuture written = ProxyErrors.send(ctx.channel(), Answer.error(ErrorType.REQUEST_TIMEOUT,
                what + " not complete within " + io.heartgate.protocol.Durations.format(
                        java.time.Duration.ofMillis(limitMs))), true);
        closeAfter(written);
    }

    /**
     * Closes the connection once {@code written} (an error answer) is written, and at the latest
     * {@link #CLOSE_AFTER_ERROR_MS} later: a client that stops reading must not hold it open.
     */
    private void closeAfter(ChannelFuture written) {
        if (written == null) {
            ctx.close();
            return;
        }
        written.addListener(ChannelFutureListener.CLOSE);
        ctx.executor().schedule(() -> {
            ctx.close();
        }, CLOSE_AFTER_ERROR_MS, TimeUnit.MILLISECONDS);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest request) || closing) {
            ReferenceCountUtil.release(msg); // after a framing error the bytes that follow may be a smuggled request
            return;
        }
        if (busy() || draining()) {
            if (queued == null) {
                queued = new ArrayDeque<>();
            }
            queued.addLast(request);
            queuedBytes += request.content().readableBytes();
            if (queued.size() >= MAX_QUEUED || queuedBytes >= MAX_QUEUED_BYTES) {
                ctx.channel().config().setAutoRead(false);
            }
            return;
        }
        begin(request);
    }

    private void begin(FullHttpRequest request) {
        if (request.decoderResult().isFailure()) {
            badRequest(request); // in its turn: a pipelined bad request is answered after the ones before it
            return;
        }
        counters.add(Counter.REQUESTS);
        long startNanos = relay.nanoTime(); // latencies count the stages too (a queue, later)
        Endpoint endpoint = Endpoint.of(request.uri());
        RequestFacts read = facts.read(request.content(), endpoint,
                readsHeaders ? request.headers()::get : RequestFactsReader.NO_HEADERS);
        staging = new StagedCall(this, stages, request, endpoint, read, startNanos);
        staging.proceed();
    }

    /**
     * The stages passed {@code request} on: the relay takes it to the node of {@code route};
     * {@code keepAlive} is whether the client asked to keep its connection, {@code startNanos} when
     * the request arrived, {@code extraHeaders} what every answer to it carries, {@code usageUnasked}
     * whether a stream's usage chunk is the proxy's alone (not relayed).
     */
    void relay(FullHttpRequest request, RequestFacts facts, Route.To route, boolean keepAlive, long startNanos,
               java.util.Map<String, String> extraHeaders, boolean usageUnasked) {
        staging = null;
        usage.relaying(usageUnasked);
        current = new Exchange(relay, this, request, facts, keepAlive, startNanos, extraHeaders);
        current.start(route);
    }

    /** A stage answered {@code request} of {@code caller} (an API key's name, or {@code null}) itself. */
    void answered(FullHttpRequest request, Answer answer, boolean keepAlive, String caller) {
        staging = null;
        if (answer.error() != null) {
            counters.error(answer.error());
        }
        relay.metrics().recordCaller(caller, answer.status());
        relay.usage().answered(caller, null, answer.status());
        boolean close = !keepAlive || draining();
        request.release();
        responded(ProxyErrors.send(ctx.channel(), answer, close), close);
    }

    private void badRequest(FullHttpRequest request) {
        Throwable cause = request.decoderResult().cause();
        request.release();
        closing = true;
        ctx.channel().config().setAutoRead(false);
        if (queued != null) {
            queued.forEach(ReferenceCountUtil::release);
            queued.clear();
            queuedBytes = 0;
        }
        HttpResponseStatus status = cause instanceof TooLongHttpHeaderException
                ? HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
                : cause instanceof TooLongHttpLineException ? HttpResponseStatus.REQUEST_URI_TOO_LONG
                : cause instanceof TooLongFrameException ? HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE
                : HttpResponseStatus.BAD_REQUEST;
        log.debug("Bad request from {}: {}", remoteIp, cause == null ? "?" : cause.toString());
        counters.error(ErrorType.BAD_REQUEST);
        // The parser lost its place in the stream: answer and close.
        ChannelFuture written = ProxyErrors.send(ctx.channel(), Answer.error(ErrorType.BAD_REQUEST, status.code(),
                "malformed HTTP request: " + (cause == null ? "?" : cause.getMessage())), true);
        closeAfter(written);
    }

    /**
     * Called by the current exchange once its response is written whole or abandoned; {@code close}
     * when the connection ends with it (the client asked so, HTTP/1.0 without keep-alive, a body
     * that ends by closing, draining, or a cut response).
     */
    void exchangeDone(Exchange e, ChannelFuture lastWrite, boolean close) {
        if (current != e) {
            return;
        }
        current = null;
        responded(lastWrite, close);
    }

    private void responded(ChannelFuture lastWrite, boolean close) {
        lastActivityMs = nowMs.getAsLong();
        turnStartMs = lastActivityMs;
        if (close || draining()) {
            if (lastWrite == null) {
                ctx.close();
            } else {
                lastWrite.addListener(ChannelFutureListener.CLOSE);
            }
            return;
        }
        if (queued != null && !queued.isEmpty() && ctx.channel().isActive()) {
            FullHttpRequest next = queued.pollFirst();
            queuedBytes -= next.content().readableBytes();
            if (!ctx.channel().config().isAutoRead() && queued.size() < MAX_QUEUED && queuedBytes < MAX_QUEUED_BYTES) {
                ctx.channel().config().setAutoRead(true);
            }
            begin(next);
        }
    }

    /** Closes the connection once it has no request in flight (the proxy is draining). */
    void drain() {
        if (!busy()) {
            ctx.close();
        }
    }

    /** Returns whether the proxy is draining: every connection closes after its current response. */
    boolean draining() {
        return draining.getAsBoolean();
    }

    Channel channel() {
        return ctx.channel();
    }

    String remoteIp() {
        return remoteIp;
    }

    /** Returns the usage accounting of the answer relayed now. */
    AnswerUsage usage() {
        return usage;
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        Exchange e = current;
        if (e != null) {
            e.clientWritabilityChanged(ctx.channel().isWritable());
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Exchange e = current;
        current = null;
        if (e != null) {
            e.clientGone();
        }
        if (staging != null) {
            staging.cancel();
            staging = null;
        }
        if (queued != null) {
            queued.forEach(ReferenceCountUtil::release);
            queued.clear();
            queuedBytes = 0;
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // A client that resets its connection is the usual case: not worth more than debug.
        log.debug("Client {} connection error: {}", remoteIp, cause.toString());
        ctx.close();
    }
}
