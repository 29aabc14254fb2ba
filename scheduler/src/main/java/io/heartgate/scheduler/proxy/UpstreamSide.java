package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.policy.HeaderPolicy;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;

/**
 * The node's half of one exchange: the connection the current attempt uses (taken from the loop's
 * pool or newly opened, given back to the pool or closed when the answer ends) and where the
 * conversation with the node stands ({@link State}): connecting, awaiting the response head,
 * reading away a busy answer, or answering. What the node sends reaches it from
 * {@link UpstreamConnection}; the {@link Exchange} hears the head it may relay, each chunk of an
 * answer it relays, a busy answer read to its end, and the node's failures. Event-loop confined.
 */
final class UpstreamSide {

    /** Where the conversation with the node stands. */
    enum State {
        /** No attempt in progress on this side. */
        IDLE,
        /** Opening a new connection to the node. */
        CONNECTING,
        /** Request sent; waiting for the response head. */
        AWAITING_HEAD,
        /** Reading away a node's overload answer before the request tries another node. */
        DISCARDING,
        /** The node's answer is being relayed to the client. */
        ANSWERING
    }

    private final UpstreamPool pool;
    private Exchange exchange;
    private Timeouts.Watch watch;
    private FullHttpRequest req;
    private UpstreamConnection conn;
    private Target target;
    /** The W3C trace context the current attempt's node gets, or {@code null}: the client's goes as sent. */
    private String traceparent;
    private State state = State.IDLE;
    private boolean reused;
    private boolean keepAlive;
    private boolean paused;

    UpstreamSide(UpstreamPool pool) {
        this.pool = pool;
    }

    /** Names the exchange this side works for, its timeouts' watch and its request; once, as the exchange is made. */
    void of(Exchange owner, Timeouts.Watch ownerWatch, FullHttpRequest request) {
        this.exchange = owner;
        this.watch = ownerWatch;
        this.req = request;
    }

    /** Replaces the request that later attempts send (an answer moving to another node sends its continuation). */
    void request(FullHttpRequest next) {
        this.req = next;
    }

    /** Sets the {@code traceparent} the next attempt sends, or {@code null} to leave the request's own. */
    void traceparent(String value) {
        traceparent = value;
    }

    /** Returns the parsed target of a node URL, parsed once for every loop. */
    Target target(String url) {
        return pool.target(url);
    }

    /**
     * Sends the request to {@code to}: on an idle pooled connection when {@code pooledOk} and there
     * is one, else on a new one.
     */
    void open(Target to, boolean pooledOk) {
        target = to;
        UpstreamConnection pooled = pooledOk ? pool.acquire(to) : null;
        reused = pooled != null;
        if (pooled != null) {
            conn = pooled;
            write();
        } else {
            state = State.CONNECTING; // first: the connect may complete at once
            connect(to);
        }
    }

    /**
     * Starts opening a new connection to {@code to}; once it is up the request goes on it, once it
     * failed the exchange hears so, at once when the connect completes at once, unless the exchange
     * let go of it ({@link #close}) meanwhile.
     */
    private void connect(Target to) {
        UpstreamConnection c = pool.connect(to);
        conn = c;
        c.ready().addListener((ChannelFuture f) -> {
            if (conn != c) { // the exchange let go of it while it was opening
                if (f.isSuccess()) {
                    pool.release(c); // nobody needs it now; keep it for the next request
                }
                return;
            }
            if (f.isSuccess()) {
                write();
            } else {
                conn = null;
                exchange.nodeFailed(Failure.CONNECT_FAILED, f.cause());
            }
        });
    }

    /**
     * Sends the request on the current connection, whose answers now come here: a new message per
     * attempt over the same headers and a duplicate of the body, so a retry sends the body again
     * from its start; the first-byte clock starts.
     */
    private void write() {
        state = State.AWAITING_HEAD;
        watch.awaitHead();
        HeaderPolicy.hostForNode(new NettyHeaders(req.headers()), target.hostHeader());
        if (traceparent != null) {
            req.headers().set("traceparent", traceparent);
        }
        String uri = target.basePath().isEmpty() ? req.uri() : target.basePath() + req.uri();
        conn.attach(this);
        conn.send(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, req.method(), uri, req.content().retainedDuplicate(),
                req.headers(), req.trailingHeaders()));
    }

    /**
     * The node's final response head: relayed if the exchange takes it, else read away; returns
     * {@code false} when it is unreadable or unexpected, and the connection is then closed like a reset.
     */
    boolean head(HttpResponse response) {
        if (response.decoderResult().isFailure() || state != State.AWAITING_HEAD) {
            return false;
        }
        keepAlive = HttpUtil.isKeepAlive(response);
        state = exchange.head(response) ? State.ANSWERING : State.DISCARDING;
        watch.relaying(); // a busy answer that stalls is given up at the idle timeout, not held with its slot
        return true;
    }

    /** A chunk of the node's response body; ownership of {@code content} passes here. */
    void content(HttpContent content, boolean last) {
        if (state == State.ANSWERING) {
            watch.touch();
            exchange.content(content, last);
            return;
        }
        content.release();
        if (state == State.DISCARDING && last) {
            responseEnded();
            exchange.discarded();
        } else if (state == State.DISCARDING) {
            watch.touch();
        }
    }

    /** End of one read from the node. */
    void readComplete() {
        exchange.upstreamReadComplete();
    }

    /** The node's connection closed while this side used it. */
    void closed(Throwable cause) {
        conn = null;
        if (state == State.AWAITING_HEAD) {
            exchange.nodeFailed(reused ? Failure.STALE_CONNECTION : Failure.RESET_BEFORE_HEAD, cause);
        } else if (state == State.DISCARDING) {
            state = State.IDLE;
            exchange.discarded(); // the overload answer already decided the retry
        } else if (state == State.ANSWERING) {
            exchange.nodeFailed(Failure.BROKE_OFF, cause);
        }
    }

    /** No response head arrived within the first-byte timeout. */
    void firstByteTimedOut() {
        if (state == State.AWAITING_HEAD) {
            close();
            exchange.nodeFailed(Failure.FIRST_BYTE_TIMEOUT, null);
        }
    }

    /** Nothing came for longer than the idle timeout. */
    void idleTimedOut() {
        if (state == State.ANSWERING) {
            exchange.nodeFailed(Failure.IDLE_TIMEOUT, null);
        } else if (state == State.DISCARDING) {
            close(); // the busy answer stalled: its connection is unusable
            state = State.IDLE;
            exchange.discarded();
        }
    }

    /** The table stopped routing the node awaited: the request moves on; the node drops the work if it wakes. */
    void nodeLost() {
        close();
        exchange.nodeFailed(Failure.NODE_LOST, null);
    }

    /** The table stopped routing the node whose answer has gone silent: its connection is closed and the answer may move. */
    void streamLost() {
        if (state == State.ANSWERING) {
            close();
            exchange.nodeFailed(Failure.NODE_LOST, null);
        }
    }

    /** Sends the request again to the same node on a new connection (a pooled one went stale). */
    void resend() {
        open(target, false);
    }

    /** Says whether the node's response head is still to come. */
    boolean awaitingHead() {
        return state == State.AWAITING_HEAD;
    }

    /** Says whether the node's answer is being relayed. */
    boolean answering() {
        return state == State.ANSWERING;
    }

    /** The request goes to another node: nothing is in progress on this side. */
    void reset() {
        state = State.IDLE;
    }

    /** Pauses or resumes reading from the node. */
    void autoRead(boolean on) {
        paused = !on;
        if (conn != null) {
            conn.autoRead(on);
        }
    }

    /** Says whether the node's answer is relayed and read as it comes (not paused for a slow client). */
    boolean reading() {
        return state == State.ANSWERING && !paused;
    }

    /** The response ended: the connection goes back to the pool, or is closed; {@code unwanted}: the node's rest is not read, so closed. */
    void responseEnded(boolean unwanted) {
        if (unwanted) {
            close();
            return;
        }
        responseEnded();
    }

    /** The response ended: the connection goes back to the pool, or is closed. */
    void responseEnded() {
        paused = false;
        UpstreamConnection c = conn;
        conn = null;
        state = State.IDLE;
        c.detach();
        c.autoRead(true);
        if (keepAlive) {
            pool.release(c);
        } else {
            c.close();
        }
    }

    /**
     * Lets go of the connection the exchange no longer wants: one in use is closed, so the node sees
     * it go and stops generating; one still opening goes to the pool once it is up.
     */
    void close() {
        UpstreamConnection c = conn;
        conn = null;
        state = State.IDLE;
        paused = false;
        if (c != null && c.attached()) {
            c.detach();
            c.close();
        }
    }
}
