package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.stage.Answer;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;

/** Writes the answers the proxy gives itself ({@link Answer}) as whole HTTP responses. */
final class ProxyErrors {

    private ProxyErrors() {
    }

    /** Returns {@code answer} as a response; with {@code Connection: close} when {@code close}. */
    static FullHttpResponse response(Answer answer, boolean close) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(answer.status()),
                Unpooled.wrappedBuffer(answer.body()));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, answer.contentType())
                .setInt(HttpHeaderNames.CONTENT_LENGTH, answer.body().length);
        answer.headers().forEach((name, value) -> r.headers().set(name, value));
        if (close) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        return r;
    }

    /** Sends {@code answer} unless the client is gone; returns the write, or {@code null} when nothing was sent. */
    static ChannelFuture send(Channel client, Answer answer, boolean close) {
        if (!client.isActive()) {
            return null;
        }
        return client.writeAndFlush(response(answer, close));
    }

    /** Returns the status that answers a request the codec could not read because of {@code cause}. */
    static HttpResponseStatus statusOf(Throwable cause) {
        return cause instanceof TooLongHttpHeaderException ? HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
                : cause instanceof TooLongHttpLineException ? HttpResponseStatus.REQUEST_URI_TOO_LONG
                : cause instanceof TooLongFrameException ? HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE
                : HttpResponseStatus.BAD_REQUEST;
    }
}
