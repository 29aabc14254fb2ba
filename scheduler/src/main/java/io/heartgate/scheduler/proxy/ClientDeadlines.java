package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.time.Ticker;
import io.netty.channel.ChannelHandlerContext;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The deadlines of one client connection: a request whose head is not complete within the header
 * timeout of its first byte (slowloris), or whose body is not complete within the body timeout of
 * its head (a trickled body), is reported to the connection, which answers 408; a connection idle
 * between requests for the keep-alive timeout is closed, so clients that never hang up do not hold
 * sockets forever, while a response in progress, however long, keeps it open. One check per
 * connection every quarter of the shortest of those timeouts, not a timer per request: requests
 * only move the activity marks and the codec's phase, and the check reschedules itself. The check
 * pending when the connection closes is cancelled ({@link #stop}): left in the loop's queue, it
 * would hold the closed connection and its buffers until it fired, which under connection churn
 * keeps thousands alive and pushes them into the old generation. Event-loop confined.
 */
final class ClientDeadlines {

    private static final Logger log = LoggerFactory.getLogger(ClientDeadlines.class);

    /** The connection the deadlines watch. */
    interface Owner {
        /** Says whether a request of the connection is being handled or waits its turn. */
        boolean busy();

        /** Says whether the connection is closing: no more checks. */
        boolean closing();

        /** A request's head ({@code head}) or body took {@code tookMs}, past its limit of {@code limitMs}. */
        void timedOut(boolean head, long tookMs, long limitMs);

        /** Returns the client's address, for the log. */
        String remoteIp();
    }

    private final ClientTimeouts timeouts;
    private final Ticker clock;
    private final Owner owner;
    private ChannelHandlerContext ctx;
    /** The connection's codec, which knows what of a request is being read; null without one (tests). */
    private ServerCodec codec;
    /** When the connection last became free to read its next request: a pipelined one is timed from then. */
    private long turnStartMs;
    /** When the client last sent bytes or a response ended (the loop's coarse clock). */
    private long lastActivityMs;
    /** The next check, until it runs or the connection closes. */
    private ScheduledFuture<?> next;

    /** @param clock the loop's coarse clock */
    ClientDeadlines(ClientTimeouts timeouts, Ticker clock, Owner owner) {
        this.timeouts = timeouts;
        this.clock = clock;
        this.owner = owner;
    }

    /** The connection is up: the checks begin. */
    void start(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.codec = ctx.pipeline().get(ServerCodec.class);
        lastActivityMs = clock.millis();
        next = ctx.executor().schedule(this::check, Math.min(timeouts.checkEveryMs(), timeouts.keepAliveMs()),
                TimeUnit.MILLISECONDS);
    }

    /** The connection closed: the pending check is taken off the loop's queue, and no other comes. */
    void stop() {
        if (next != null) {
            next.cancel(false);
            next = null;
        }
    }

    /** The client sent bytes. */
    void activity() {
        lastActivityMs = clock.millis();
    }

    /** A response ended: the connection is free for its next request, timed from now. */
    void turnStarts() {
        lastActivityMs = clock.millis();
        turnStartMs = lastActivityMs;
    }

    /**
     * Reports a request whose head or body is overdue, or closes the connection if it has been idle
     * between requests for the keep-alive timeout; then schedules the next check. A pipelined
     * request being read while an earlier one is answered is timed once it is its turn.
     */
    private void check() {
        next = null;
        if (!ctx.channel().isActive() || owner.closing()) {
            return;
        }
        long now = clock.millis();
        boolean busy = owner.busy();
        ServerCodec.Receiving receiving = codec == null ? ServerCodec.Receiving.NOTHING : codec.receiving();
        if (!busy && receiving != ServerCodec.Receiving.NOTHING) {
            boolean head = receiving == ServerCodec.Receiving.HEAD;
            long tookMs = now - Math.max(codec.receivingSinceMs(), turnStartMs);
            long limitMs = head ? timeouts.headerMs() : timeouts.bodyMs();
            if (tookMs >= limitMs) {
                owner.timedOut(head, tookMs, limitMs);
                return;
            }
        }
        long idleMs = now - lastActivityMs;
        long keepAliveMs = timeouts.keepAliveMs();
        if (!busy && receiving == ServerCodec.Receiving.NOTHING && idleMs >= keepAliveMs) {
            log.debug("Client {} idle for {} ms between requests; closing its connection", owner.remoteIp(), idleMs);
            ctx.close();
            return;
        }
        long every = timeouts.checkEveryMs();
        long inMs = busy ? every : Math.min(every, Math.max(1, keepAliveMs - idleMs));
        next = ctx.executor().schedule(this::check, inMs, TimeUnit.MILLISECONDS);
    }
}
