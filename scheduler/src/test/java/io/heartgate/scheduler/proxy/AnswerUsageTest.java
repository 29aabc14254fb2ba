package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Which answers have the usage chunk the proxy asked for kept from their client: judged by the node's head. */
class AnswerUsageTest {

    private static final String USAGE = "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
            + "\"completion_tokens\":2,\"total_tokens\":3}}\n\n";

    private static HttpResponse sse(String header, String value) {
        HttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
        if (header != null) {
            response.headers().set(header, value);
        }
        return response;
    }

    /** Whether the usage event of an answer with head {@code response} is kept from the client. */
    private static boolean keptBack(HttpResponse response) {
        AnswerUsage usage = new AnswerUsage();
        var request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/chat/completions");
        try {
            usage.relaying(true);
            usage.head(request, 200, response);
            HttpContent in = new DefaultHttpContent(Unpooled.copiedBuffer(USAGE, StandardCharsets.UTF_8));
            HttpContent out = usage.shown(in, false);
            if (out != null) {
                out.release();
            }
            return out == null;
        } finally {
            request.release();
        }
    }

    @Test
    void aPlainStreamHasItsUsageEventKeptBack() {
        assertThat(keptBack(sse(null, null))).isTrue();
    }

    @Test
    void aCompressedStreamOrOneOfAGivenLengthIsRelayedAsItIs() {
        assertThat(keptBack(sse("content-encoding", "gzip"))).as("its bytes are not lines").isFalse();
        assertThat(keptBack(sse("content-length", String.valueOf(USAGE.length())))).as("its client waits for them all")
                .isFalse();
    }
}
