package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.time.Ticker;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * One event loop's idle keep-alive connections to each node, most recently used first, and the way
 * to open new ones. Confined to the loop's thread, so nothing here is locked. Written by hand
 * because Netty's {@code ChannelPool} hands out channels through futures and health checks per
 * acquire, more work per request than a stack of idle connections that the loop alone touches.
 */
final class UpstreamPool {

    /** How long an idle upstream connection is kept (the node may close it sooner). */
    static final long IDLE_KEEP_MS = 60_000;

    /** Opens connections; the real one is Netty's bootstrap, tests give embedded channels. */
    interface Connector {
        /** Starts opening a connection to {@code handler}'s target with {@code handler} last in its pipeline. */
        void open(UpstreamConnection handler);
    }

    private final Connector connector;
    private final Ticker clock;
    private final BooleanSupplier draining;
    private final Targets targets;
    private final Map<Target, ArrayDeque<UpstreamConnection>> idle = new HashMap<>();
    private long nextPurgeMs;

    /**
     * @param clock the loop's coarse clock
     * @param draining whether the proxy is shutting down (no connection goes back to the pool then)
     * @param targets the node URLs parsed, shared by every loop
     */
    UpstreamPool(Connector connector, Ticker clock, BooleanSupplier draining, Targets targets) {
        this.connector = connector;
        this.targets = targets;
        this.clock = clock;
        this.draining = draining;
    }

    /** Returns the parsed target of a node URL. */
    Target target(String url) {
        return targets.of(url);
    }

    /** Returns an idle open connection to {@code target}, most recently used first, or {@code null}. */
    UpstreamConnection acquire(Target target) {
        ArrayDeque<UpstreamConnection> stack = idle.get(target);
        if (stack == null) {
            return null;
        }
        UpstreamConnection c;
        while ((c = stack.pollLast()) != null) {
            if (c.isActive()) {
                return c;
            }
        }
        return null;
    }

    /** Keeps a connection whose last response ended cleanly for the next request to its target. */
    void release(UpstreamConnection c) {
        if (!c.isActive() || draining.getAsBoolean()) {
            c.close();
            return;
        }
        c.idleSince(clock.millis());
        idle.computeIfAbsent(c.target(), t -> new ArrayDeque<>()).addLast(c);
    }

    /**
     * Starts opening a new connection to {@code target}; {@link UpstreamConnection#ready()} completes
     * once it can carry a request (for an https node, once the TLS handshake has, so that a
     * certificate the proxy cannot trust fails like a refused connection).
     */
    UpstreamConnection connect(Target target) {
        UpstreamConnection c = new UpstreamConnection(target);
        connector.open(c);
        return c;
    }

    /** Closes connections idle for longer than {@link #IDLE_KEEP_MS}, or closed by their node; at most once a second. */
    void purge() {
        long now = clock.millis();
        if (now < nextPurgeMs) {
            return;
        }
        nextPurgeMs = now + 1000;
        for (Iterator<ArrayDeque<UpstreamConnection>> it = idle.values().iterator(); it.hasNext(); ) {
            ArrayDeque<UpstreamConnection> stack = it.next();
            stack.removeIf(c -> {
                boolean expired = !c.isActive() || now - c.idleSinceMs() > IDLE_KEEP_MS;
                if (expired) {
                    c.close();
                }
                return expired;
            });
            if (stack.isEmpty()) {
                it.remove();
            }
        }
    }

    /** Returns how many idle connections the pool holds (for tests and the purge). */
    int idleCount() {
        int n = 0;
        for (ArrayDeque<UpstreamConnection> stack : idle.values()) {
            n += stack.size();
        }
        return n;
    }
}
