package io.heartgate.scheduler.proxy;

import io.heartgate.protocol.Durations;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.stage.Answer;
import io.heartgate.scheduler.proxy.stage.Stage;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection: takes its requests in order, reads each one's facts once, runs it through
 * the stages and then the relay ({@link Exchange}), one request at a time, and tells the exchange
 * when the client hangs up or its socket buffer fills or drains. A pipelining client's next
 * requests wait, already read, until the current response is written.
 * Past a few, or past {@link #MAX_QUEUED_BYTES} of bodies, reading stops. Slow heads and bodies and
 * idle connections are timed by {@link ClientDeadlines}. Event-loop confined.
 */
final class ClientConnection extends ChannelInboundHandlerAdapter implements ClientDeadlines.Owner {

    private static final Logger log = LoggerFactory.getLogger(ClientConnection.class);
    private static final int MAX_QUEUED = 16;
    /** Bodies of pipelined requests held before reading stops: the current request's own is on top. */
    static final long MAX_QUEUED_BYTES = 1024 * 1024;
    /** The longest an error answer that closes the connection may take to be written. */
    private static final long CLOSE_AFTER_ERROR_MS = 5000;

    private final Exchanges exchanges;
    private final List<Stage> stages;
    private final RequestFactsReader facts;
    private final boolean readsHeaders;
    private final Recorder recorder;
    private final Timeouts timeouts;
    private final ClientDeadlines deadlines;
    private final BooleanSupplier draining;
    private ChannelHandlerContext ctx;
    private long queuedBytes;
    private String remoteIp = "unknown";
    private StagedCall staging;
    /** The end of the current response's body, for usage accounting. */
    private final AnswerUsage usage = new AnswerUsage();
    private Exchange current;
    private ArrayDeque<FullHttpRequest> queued;
    /** Set once a request could not be framed: whatever follows on this connection is not read as requests. */
    private boolean closing;

    /**
     * @param timeouts the loop's clocks: its coarse ms clock, and the monotonic clock latencies start on
     * @param clientTimeouts keep-alive, header and body timeouts, in ms
     * @param draining whether the proxy is shutting down: every connection closes after its current response
     */
    ClientConnection(Exchanges exchanges, List<Stage> stages, RequestFactsReader facts, Recorder recorder,
                     Timeouts timeouts, ClientTimeouts clientTimeouts, BooleanSupplier draining) {
        this.exchanges = exchanges;
        this.stages = stages;
        this.facts = facts;
        this.readsHeaders = facts.readsHeaders();
        this.recorder = recorder;
        this.timeouts = timeouts;
        this.deadlines = new ClientDeadlines(clientTimeouts, timeouts.coarse(), this);
        this.draining = draining;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        if (ctx.channel().remoteAddress() instanceof InetSocketAddress a && a.getAddress() != null) {
            remoteIp = a.getAddress().getHostAddress();
        }
        deadlines.start(ctx);
        ctx.fireChannelActive();
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        deadlines.activity();
        ctx.fireChannelReadComplete();
    }

    @Override
    public boolean busy() {
        return current != null || staging != null || (queued != null && !queued.isEmpty());
    }

    @Override
    public boolean closing() {
        return closing;
    }

    @Override
    public void timedOut(boolean head, long tookMs, long limitMs) {
        closing = true;
        ctx.channel().config().setAutoRead(false);
        recorder.error(ErrorType.REQUEST_TIMEOUT);
        String what = head ? "request head" : "request body";
        log.debug("Client {}: {} not complete after {} ms; answering 408", remoteIp, what, tookMs);
        ChannelFuture written = ProxyErrors.send(ctx.channel(), Answer.error(ErrorType.REQUEST_TIMEOUT,
                what + " not complete within " + Durations.format(Duration.ofMillis(limitMs))), true);
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
        ctx.executor().schedule(() -> ctx.close(), CLOSE_AFTER_ERROR_MS, TimeUnit.MILLISECONDS);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest request) || closing) {
            ReferenceCountUtil.release(msg); // after a framing error the bytes that follow may be a smuggled request
            return;
        }
        if (current != null || staging != null || draining()) {
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
        recorder.count(Counter.REQUESTS);
        long startNanos = timeouts.nanoTime(); // latencies count the stages too
        Endpoint endpoint = Endpoint.of(request.uri());
        RequestFacts read = facts.read(request.content(), endpoint,
                readsHeaders ? request.headers()::get : RequestFactsReader.NO_HEADERS);
        staging = new StagedCall(this, stages, request, endpoint, read, startNanos);
        staging.proceed();
    }

    /** The stages passed the request on as {@code call}: an exchange takes it to a node. */
    void relay(Admitted call) {
        staging = null;
        usage.relaying(call.usageChunkHidden());
        current = exchanges.open(this, call);
        current.start();
    }

    /** A stage answered {@code request} of {@code caller} (an API key's name, or {@code null}) itself. */
    void answered(FullHttpRequest request, Answer answer, boolean keepAlive, String caller) {
        staging = null;
        if (answer.error() != null) {
            recorder.error(answer.error());
        }
        recorder.ended(caller, null, answer.status());
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
        log.debug("Bad request from {}: {}", remoteIp, cause == null ? "?" : cause.toString());
        recorder.error(ErrorType.BAD_REQUEST);
        // The parser lost its place in the stream: answer and close.
        ChannelFuture written = ProxyErrors.send(ctx.channel(), Answer.error(ErrorType.BAD_REQUEST, ProxyErrors.statusOf(cause).code(),
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
        deadlines.turnStarts();
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
        if (current == null && staging == null) {
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

    @Override
    public String remoteIp() {
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
        deadlines.stop();
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
