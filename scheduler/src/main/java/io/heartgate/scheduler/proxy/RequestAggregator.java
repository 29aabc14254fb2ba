package io.heartgate.scheduler.proxy;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpUtil;

/**
 * Reads a request body whole into a buffer of at most {@code --max-body} bytes, so the model can be
 * read before a node is chosen and the same body replayed on another node. Over the limit, whether
 * declared up front, announced with {@code Expect: 100-continue} or found while reading, the client
 * gets the contract's 413 {@code request_too_large} and the connection closes (the rest of the body
 * is not read).
 */
final class RequestAggregator extends HttpObjectAggregator {

    private final ProxyServer.Shared shared;

    RequestAggregator(ProxyServer.Shared shared) {
        super((int) Math.min(Integer.MAX_VALUE - 8, shared.config().maxBodyBytes()), true);
        this.shared = shared;
    }

    @Override
    protected Object newContinueResponse(HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
        if (HttpUtil.is100ContinueExpected(start) && HttpUtil.getContentLength(start, -1L) > maxContentLength) {
            start.headers().remove(HttpHeaderNames.EXPECT);
            counted();
            return ProxyErrors.response(413, ProxyErrors.REQUEST_TOO_LARGE, message(), true);
        }
        return super.newContinueResponse(start, maxContentLength, pipeline);
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        counted();
        ctx.writeAndFlush(ProxyErrors.response(413, ProxyErrors.REQUEST_TOO_LARGE, message(), true))
                .addListener(ChannelFutureListener.CLOSE);
    }

    private void counted() {
        shared.stats().requests.increment();
        shared.stats().errorsTooLarge.increment();
    }

    private String message() {
        return "request body is larger than " + shared.config().maxBodyBytes() + " bytes";
    }
}
