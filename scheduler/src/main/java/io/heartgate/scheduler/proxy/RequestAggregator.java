package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.stage.Answer;
import io.heartgate.scheduler.request.ErrorType;
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
 * gets 413 {@code request_too_large} and the connection closes (the rest of the body is not read).
 */
final class RequestAggregator extends HttpObjectAggregator {

    private final long maxBodyBytes;
    private final ProxyCounters counters;

    RequestAggregator(long maxBodyBytes, ProxyCounters counters) {
        super((int) Math.min(Integer.MAX_VALUE - 8, maxBodyBytes), true);
        this.maxBodyBytes = maxBodyBytes;
        this.counters = counters;
    }

    @Override
    protected Object newContinueResponse(HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
        if (HttpUtil.is100ContinueExpected(start) && HttpUtil.getContentLength(start, -1L) > maxContentLength) {
            start.headers().remove(HttpHeaderNames.EXPECT);
            return tooLarge();
        }
        return super.newContinueResponse(start, maxContentLength, pipeline);
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        ctx.writeAndFlush(tooLarge()).addListener(ChannelFutureListener.CLOSE);
    }

    private Object tooLarge() {
        counters.add(Counter.REQUESTS);
        counters.error(ErrorType.REQUEST_TOO_LARGE);
        return ProxyErrors.response(Answer.error(ErrorType.REQUEST_TOO_LARGE,
                "request body is larger than " + maxBodyBytes + " bytes"), true);
    }
}
