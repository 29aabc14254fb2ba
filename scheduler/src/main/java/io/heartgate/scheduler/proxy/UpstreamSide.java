package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.policy.HeaderPolicy;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpVersion;

/**
 * The node's half of one exchange: the connection the current attempt uses, taken from the loop's
 * pool or newly opened, and given back to the pool (or closed) when the response ends. Event-loop
 * confined.
 */
final class UpstreamSide {

    private final UpstreamPool pool;
    private Exchange exchange;
    private UpstreamConnection conn;
    private boolean reused;
    private boolean keepAlive;

    UpstreamSide(UpstreamPool pool) {
        this.pool = pool;
    }

    /** Names the exchange this side works for; once, as the exchange is made. */
    void of(Exchange owner) {
        this.exchange = owner;
    }

    /** Returns the parsed target of a node URL, parsed once for every loop. */
    Target target(String url) {
        return pool.target(url);
    }

    /**
     * Sends the exchange's request to {@code target}: on an idle pooled connection when
     * {@code pooledOk} and there is one, else on a new one ({@link Exchange#connecting} first).
     */
    void open(Target target, boolean pooledOk) {
        if (pooledOk && takePooled(target)) {
            exchange.write();
        } else {
            exchange.connecting();
            connect(target);
        }
    }

    /** Takes an idle pooled connection to {@code target} if there is one; returns whether it did. */
    private boolean takePooled(Target target) {
        UpstreamConnection pooled = pool.acquire(target);
        reused = pooled != null;
        if (pooled != null) {
            conn = pooled;
        }
        return reused;
    }

    /**
     * Starts opening a new connection to {@code target}; once it is up the exchange sends on it
     * ({@link Exchange#write}), once it failed it hears so ({@link Exchange#connectFailed}), at once
     * when the connect completes at once, unless the exchange let go of it ({@link #close}) meanwhile.
     */
    private void connect(Target target) {
        reused = false;
        UpstreamConnection c = pool.connect(target);
        conn = c;
        c.ready().addListener((ChannelFuture f) -> {
            if (conn != c) { // the exchange let go of it while it was opening
                if (f.isSuccess()) {
                    pool.release(c); // nobody needs it now; keep it for the next request
                }
                return;
            }
            if (f.isSuccess()) {
                exchange.write();
            } else {
                conn = null;
                exchange.connectFailed(f.cause());
            }
        });
    }

    /**
     * Sends {@code req} to {@code target} on the current connection, whose answers now go to the
     * exchange: a new message per attempt over the same headers and a duplicate of the body, so a
     * retry sends the body again from its start.
     */
    void send(FullHttpRequest req, Target target) {
        HeaderPolicy.hostForNode(new NettyHeaders(req.headers()), target.hostHeader());
        String uri = target.basePath().isEmpty() ? req.uri() : target.basePath() + req.uri();
        conn.attach(exchange);
        conn.send(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, req.method(), uri, req.content().retainedDuplicate(),
                req.headers(), req.trailingHeaders()));
    }

    /** Returns whether the current connection came from the pool (a close before the head may be a stale one). */
    boolean reused() {
        return reused;
    }

    /** Notes whether the node keeps the connection open after this response. */
    void keepAlive(boolean keep) {
        keepAlive = keep;
    }

    /** Pauses or resumes reading from the node. */
    void autoRead(boolean on) {
        if (conn != null) {
            conn.autoRead(on);
        }
    }

    /** The response ended: the connection goes back to the pool, or is closed. */
    void responseEnded() {
        UpstreamConnection c = conn;
        conn = null;
        c.detach();
        c.autoRead(true);
        if (keepAlive) {
            pool.release(c);
        } else {
            c.close();
        }
    }

    /** The node closed the connection. */
    void lost() {
        conn = null;
    }

    /**
     * Lets go of the connection the exchange no longer wants: one in use is closed, so the node sees
     * it go and stops generating; one still opening goes to the pool once it is up.
     */
    void close() {
        UpstreamConnection c = conn;
        conn = null;
        if (c != null && c.attached()) {
            c.detach();
            c.close();
        }
    }
}
