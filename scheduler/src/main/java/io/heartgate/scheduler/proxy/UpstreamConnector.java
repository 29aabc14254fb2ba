package io.heartgate.scheduler.proxy;

import io.netty.bootstrap.Bootstrap;
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
import java.time.Duration;

/**
 * Opens connections to nodes on one event loop with Netty's bootstrap: TCP_NODELAY, the connect
 * timeout, the non-blocking resolver for node names, TLS for https nodes, and every channel in one
 * group so that shutdown closes it, and waits, before the loops stop.
 */
final class UpstreamConnector implements UpstreamPool.Connector {

    private final Bootstrap bootstrap;
    private final SslContext tls;
    private final ChannelGroup upstreams;

    UpstreamConnector(EventLoop loop, Class<? extends SocketChannel> socketType,
                      AddressResolverGroup<InetSocketAddress> resolver, SslContext tls, ChannelGroup upstreams,
                      Duration connectTimeout) {
        this.tls = tls;
        this.upstreams = upstreams;
        this.bootstrap = new Bootstrap()
                .group(loop)
                .channel(socketType)
                .resolver(resolver)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis()));
    }

    @Override
    public void open(UpstreamConnection handler) {
        Target target = handler.target();
        Bootstrap b = bootstrap.clone().handler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
                if (target.ssl()) {
                    ch.pipeline().addLast(tls.newHandler(ch.alloc(), target.host(), target.port()));
                }
                ch.pipeline().addLast(new HttpClientCodec(8192, 64 * 1024, 64 * 1024), handler);
                upstreams.add(ch);
            }
        });
        ChannelFuture connected = b.connect(target.address());
        if (!target.ssl()) {
            handler.opened(connected.channel(), connected);
            return;
        }
        ChannelPromise ready = connected.channel().newPromise();
        handler.opened(connected.channel(), ready);
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
    }
}
