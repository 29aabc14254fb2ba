package io.heartgate.scheduler.proxy;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.resolver.AddressResolverGroup;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * What one event loop owns: its timeouts and its pool of idle keep-alive connections to each node.
 * Confined to the loop's thread, so nothing here is locked. Written by hand because Netty's
 * {@code ChannelPool} hands out channels through futures and health checks per acquire, more work
 * per request than a stack of idle channels that the loop alone touches.
 */
final class LoopState {

    /** How long an idle upstream connection is kept (the node may close it sooner). */
    static final long IDLE_KEEP_MS = 60_000;

    private final ProxyServer.Shared shared;
    private final EventLoop loop;
    private final Bootstrap bootstrap;
    private final SslContext tls;
    private final Timeouts timeouts;
    private final Map<Target, ArrayDeque<Channel>> idle = new HashMap<>();
    private final ChannelGroup upstreams;
    private long nextPurgeMs;

    LoopState(ProxyServer.Shared shared, EventLoop loop, Class<? extends SocketChannel> socketType,
              AddressResolverGroup<InetSocketAddress> resolver, SslContext tls, ChannelGroup upstreams) {
        this.shared = shared;
        this.loop = loop;
        this.tls = tls;
        this.upstreams = upstreams;
        ProxyConfig c = shared.config();
        this.timeouts = new Timeouts(shared.nanoTicker(), c.firstByteTimeout().toMillis(), c.idleTimeout().toMillis());
        this.bootstrap = new Bootstrap()
                .group(loop)
                .channel(socketType)
                .resolver(resolver)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, c.connectTimeout().toMillis()));
    }

    EventLoop loop() {
        return loop;
    }

    ProxyServer.Shared shared() {
        return shared;
    }

    Timeouts timeouts() {
        return timeouts;
    }

    /** Returns an idle open connection to {@code target}, most recently used first, or {@code null}. */
    Channel acquire(Target target) {
        ArrayDeque<Channel> stack = idle.get(target);
        if (stack == null) {
            return null;
        }
        Channel ch;
        while ((ch = stack.pollLast()) != null) {
            if (ch.isActive()) {
                return ch;
            }
        }
        return null;
    }

    /** Keeps a connection whose last response ended cleanly for the next request to {@code target}. */
    void release(Target target, Channel channel) {
        if (!channel.isActive() || shared.draining().get()) {
            channel.close();
            return;
        }
        // The idle-since time lives on the connection's handler: nothing is allocated per request.
        ((UpstreamConnection) channel.pipeline().last()).idleSinceMs = timeouts.nowMs();
        idle.computeIfAbsent(target, t -> new ArrayDeque<>()).addLast(channel);
    }

    /**
     * Opens a new connection to {@code target}; its handler is an idle {@link UpstreamConnection}.
     * For an https node the future completes once the TLS handshake has, so that a certificate the
     * proxy cannot trust fails the connect (and counts toward ejection) like a refused connection.
     */
    ChannelFuture connect(Target target) {
        Bootstrap b = bootstrap.clone().handler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
                if (target.ssl()) {
                    ch.pipeline().addLast(tls.newHandler(ch.alloc(), target.host(), target.port()));
                }
                ch.pipeline().addLast(new HttpClientCodec(8192, 64 * 1024, 64 * 1024), new UpstreamConnection());
                upstreams.add(ch); // so that shutdown closes it, and waits, before the loops stop
            }
        });
        ChannelFuture connected = b.connect(target.address());
        if (!target.ssl()) {
            return connected;
        }
        ChannelPromise ready = connected.channel().newPromise();
        connected.addListener((ChannelFuture f) -> {
            if (!f.isSuccess()) {
                ready.tryFailure(f.cause());
                return;
            }
            f.channel().pipeline().get(SslHandler.class).handshakeFuture().addListener(h -> {
                if (h.isSuccess()) {
                    ready.trySuccess();
                } else {
                    f.channel().close();
                    ready.tryFailure(h.cause());
                }
            });
        });
        return ready;
    }

    /** Runs every 100 ms on the loop: timeouts, and once a second the idle connections' expiry. */
    void sweep() {
        timeouts.sweep();
        long now = timeouts.nowMs();
        if (now >= nextPurgeMs) {
            nextPurgeMs = now + 1000;
            for (Iterator<ArrayDeque<Channel>> it = idle.values().iterator(); it.hasNext(); ) {
                ArrayDeque<Channel> stack = it.next();
                stack.removeIf(ch -> {
                    // A closed channel may have lost its handlers already: test it first.
                    boolean expired = !ch.isActive()
                            || now - ((UpstreamConnection) ch.pipeline().last()).idleSinceMs > IDLE_KEEP_MS;
                    if (expired) {
                        ch.close();
                    }
                    return expired;
                });
                if (stack.isEmpty()) {
                    it.remove();
                }
            }
        }
    }
}
