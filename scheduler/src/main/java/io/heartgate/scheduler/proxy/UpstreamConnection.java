package io.heartgate.scheduler.proxy;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;

/**
 * One keep-alive connection to a node, and the handle the pool and the exchanges hold of it: hands
 * what the node sends to the exchange it serves now, or drops the connection when the node speaks
 * while it is idle in the pool. An interim answer (1xx: 100 Continue, 103 Early Hints) is skipped
 * here, with the empty end the codec gives it: the exchange sees the final head only.
 * Event-loop confined.
 */
final class UpstreamConnection extends ChannelInboundHandlerAdapter {

    private final Target target;
    private Channel channel;
    private ChannelFuture ready;
    private UpstreamSide side;
    private Throwable cause;
    private long idleSinceMs;
    /** Whether an interim (1xx) answer is being skipped: its empty end follows. */
    private boolean interim;

    UpstreamConnection(Target target) {
        this.target = target;
    }

    /** Returns the node this connection goes to. */
    Target target() {
        return target;
    }

    /** Records the channel and the future that completes once it can carry a request. */
    void opened(Channel ch, ChannelFuture readyFuture) {
        this.channel = ch;
        this.ready = readyFuture;
    }

    /** Returns the future that completes once the connection (and its TLS handshake) is up. */
    ChannelFuture ready() {
        return ready;
    }

    /** Binds the connection to the exchange's node side about to send on it. */
    void attach(UpstreamSide e) {
        side = e;
        cause = null;
        interim = false;
    }

    /** Returns whether an exchange uses the connection now. */
    boolean attached() {
        return side != null;
    }

    /** Unbinds the connection; what arrives afterwards is not that exchange's business. */
    void detach() {
        side = null;
    }

    /** Sends {@code request}; a failed write reaches {@link #exceptionCaught}, which closes. */
    void send(HttpRequest request) {
        channel.writeAndFlush(request, channel.voidPromise());
    }

    /** Pauses or resumes reading from the node (back-pressure from a slow client). */
    void autoRead(boolean on) {
        if (channel.config().isAutoRead() != on) {
            channel.config().setAutoRead(on);
        }
    }

    boolean isActive() {
        return channel.isActive();
    }

    void close() {
        channel.close();
    }

    /** Notes when the connection went back to the pool (the loop's coarse clock, ms). */
    void idleSince(long ms) {
        idleSinceMs = ms;
    }

    long idleSinceMs() {
        return idleSinceMs;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        UpstreamSide e = side;
        if (e == null) {
            ReferenceCountUtil.release(msg);
            ctx.close(); // a node talking on an idle connection: its state is unknown, do not reuse it
            return;
        }
        if (interim || msg instanceof HttpResponse r && r.status().code() >= 100 && r.status().code() < 200
                && r.decoderResult().isSuccess()) {
            interim = !(msg instanceof LastHttpContent); // a 1xx head, then its empty end
            ReferenceCountUtil.release(msg);
            return;
        }
        if (msg instanceof HttpResponse head && !e.head(head)) {
            ReferenceCountUtil.release(msg);
            ctx.close(); // an unreadable or unexpected head: the exchange hears of it as a reset
            return;
        }
        if (msg instanceof HttpContent content) {
            e.content(content, content instanceof LastHttpContent);
        } else if (!(msg instanceof HttpResponse)) {
            ReferenceCountUtil.release(msg); // not HTTP (bytes after a 101): not relayed
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        UpstreamSide e = side;
        if (e != null) {
            e.readComplete();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        UpstreamSide e = side;
        side = null;
        if (e != null) {
            e.closed(cause);
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
