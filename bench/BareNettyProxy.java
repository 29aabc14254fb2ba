import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;

/**
 * The least a raw Netty 4.2 proxy can do, as a second yardstick beside bench/BareProxy.java: port 19080,
 * round robin over the sims on 19001-19003, native epoll, one keep-alive upstream pool per event loop,
 * body aggregated, headers passed as they are, no retries, timeouts, routing or metrics. It answers
 * "how close to nginx could a hand-written HTTP relay on Netty get here?". Not part of the build:
 * bench/variants.sh compiles it for a "LABEL|netty:" variant.
 */
public final class BareNettyProxy {

    private static final int[] PORTS = {19001, 19002, 19003};
    /** -Dbare.transport=io_uring runs it on Netty's io_uring transport instead of epoll. */
    private static final boolean URING = "io_uring".equals(System.getProperty("bare.transport"));

    /** Idle upstream connections of one event loop, per sim; touched only by that loop's thread. */
    private static final class LoopPool {
        final ArrayDeque<Channel>[] idle;
        int next;

        @SuppressWarnings("unchecked")
        LoopPool() {
            idle = new ArrayDeque[PORTS.length];
            for (int i = 0; i < idle.length; i++) {
                idle[i] = new ArrayDeque<>();
            }
        }
    }

    private static final ThreadLocal<LoopPool> POOLS = ThreadLocal.withInitial(LoopPool::new);

    /** Relays one upstream connection's responses to whichever client connection it currently serves. */
    private static final class Upstream extends ChannelInboundHandlerAdapter {
        final int slot;
        Channel client;

        Upstream(int slot) {
            this.slot = slot;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Channel out = client;
            if (out == null || !out.isActive()) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (msg instanceof LastHttpContent) {
                out.writeAndFlush(msg);
                client = null;
                POOLS.get().idle[slot].addLast(ctx.channel());
            } else {
                out.write(msg);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            Channel out = client;
            if (out != null) {
                out.flush();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    private static final class Downstream extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            FullHttpRequest request = (FullHttpRequest) msg;
            EventLoop loop = ctx.channel().eventLoop();
            LoopPool pool = POOLS.get();
            int slot = pool.next++ % PORTS.length;
            Channel up;
            while ((up = pool.idle[slot].pollLast()) != null && !up.isActive()) {
                // stale connection: drop it
            }
            if (up != null) {
                send(up, ctx.channel(), request);
                return;
            }
            new Bootstrap().group(loop).channel(URING ? IoUringSocketChannel.class : EpollSocketChannel.class).option(ChannelOption.TCP_NODELAY, true)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpClientCodec(), new Upstream(slot));
                        }
                    })
                    .connect(new InetSocketAddress("127.0.0.1", PORTS[slot])).addListener(f -> {
                        if (f.isSuccess()) {
                            send(((io.netty.channel.ChannelFuture) f).channel(), ctx.channel(), request);
                        } else {
                            request.release();
                            ctx.close();
                        }
                    });
        }

        private static void send(Channel up, Channel client, FullHttpRequest request) {
            up.pipeline().get(Upstream.class).client = client;
            up.writeAndFlush(request);
        }
    }

    public static void main(String[] args) throws InterruptedException {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(Runtime.getRuntime().availableProcessors(),
                URING ? IoUringIoHandler.newFactory() : EpollIoHandler.newFactory());
        new ServerBootstrap().group(group).channel(URING ? IoUringServerSocketChannel.class : EpollServerSocketChannel.class)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(16 << 20), new Downstream());
                    }
                })
                .bind("127.0.0.1", 19080).sync();
        System.out.println("proxy listening on 127.0.0.1:19080");
    }
}
