package io.heartgate.scheduler.proxy;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;

/**
 * One keep-alive connection to a node: hands what the node sends to the exchange it currently
 * serves, or drops the connection when the node speaks while it is idle in the pool. Event-loop
 * confined.
 */
final class UpstreamConnection extends ChannelInboundHandlerAdapter {

    private Exchange exchange;
    private Throwable cause;
    /** When the connection last went back to its loop's pool (the loop's coarse clock, ms). */
    long idleSinceMs;

    /** Binds the connection to the exchange about to send on it. */
    void attach(Exchange e) {
        exchange = e;
        cause = null;
    }

    /** Unbinds the connection; what arrives afterwards is not that exchange's business. */
    void detach() {
        exchange = null;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Exchange e = exchange;
        if (e == null) {
            ReferenceCountUtil.release(msg);
            ctx.close(); // a node talking on an idle connection: its state is unknown, do not reuse it
            return;
        }
        e.upstreamRead(msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        Exchange e = exchange;
        if (e != null) {
            e.upstreamReadComplete();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Exchange e = exchange;
        exchange = null;
        if (e != null) {
            e.upstreamClosed(cause);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable t) {
        if (cause == null) {
            cause = t;
        }
        ctx.close();
    }
}
