package io.heartgate.scheduler.proxy;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;

/** Writes the errors the proxy makes itself, in the OpenAI shape CONTRACT.md fixes. */
final class ProxyErrors {

    static final String NO_UPSTREAM = "no_upstream";
    static final String MODEL_NOT_FOUND = "model_not_found";
    static final String UPSTREAM_UNREACHABLE = "upstream_unreachable";
    static final String UPSTREAM_TIMEOUT = "upstream_timeout";
    static final String REQUEST_TOO_LARGE = "request_too_large";
    /** Not a CONTRACT.md row: the request could not be parsed as HTTP at all (400, 414, 431). */
    static final String BAD_REQUEST = "bad_request";

    private ProxyErrors() {
    }

    /** Returns {@code {"error": {"message": ..., "type": ...}}} as a whole response. */
    static FullHttpResponse response(int status, String type, String message, boolean close) {
        byte[] body = new JsonObject()
                .put("error", new JsonObject().put("message", message).put("type", type))
                .encode().getBytes(StandardCharsets.UTF_8);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                Unpooled.wrappedBuffer(body));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json; charset=utf-8")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        if (close) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        return r;
    }

    /** Sends the error unless the client is gone; returns the write, or {@code null} when nothing was sent. */
    static ChannelFuture send(Channel client, int status, String type, String message, boolean close) {
        if (!client.isActive()) {
            return null;
        }
        return client.writeAndFlush(response(status, type, message, close));
    }
}
