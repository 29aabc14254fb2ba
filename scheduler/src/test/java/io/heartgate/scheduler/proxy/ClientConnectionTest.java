package io.heartgate.scheduler.proxy;

import static io.heartgate.scheduler.proxy.EmbeddedRelay.CHAT;
import static io.heartgate.scheduler.proxy.EmbeddedRelay.KEEP_ALIVE_MS;
import static io.heartgate.scheduler.proxy.EmbeddedRelay.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The client connection's keep-alive timeout and pipelining on an embedded channel and a fake clock. */
class ClientConnectionTest {

    private final EmbeddedRelay relay = new EmbeddedRelay("n1");

    @AfterEach
    void tearDown() {
        relay.close();
    }

    private void drainClient() {
        Object o;
        while ((o = relay.client.readOutbound()) != null) {
            ReferenceCountUtil.release(o);
        }
    }

    /** Answers as Netty's client codec hands a response over: a head, then the body. */
    private static void answer(EmbeddedChannel up) {
        FullHttpRequest r = up.readOutbound();
        r.release();
        DefaultHttpResponse ok = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        ok.headers().setInt("content-length", 2);
        up.writeInbound(ok, new DefaultLastHttpContent(Unpooled.wrappedBuffer(new byte[] {'o', 'k'})));
    }

    @Test
    void aConnectionIdleBetweenRequestsClosesAfterTheKeepAliveTimeoutExactly() {
        relay.advanceClient(KEEP_ALIVE_MS - 1);
        assertThat(relay.client.isActive()).isTrue();
        relay.advanceClient(1);
        assertThat(relay.client.isActive()).isFalse();
    }

    @Test
    void aResponseInProgressOfAnyLengthKeepsTheConnectionAndIdlenessCountsFromItsEnd() {
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel up = relay.upstream("n1");
        ((FullHttpRequest) up.readOutbound()).release();
        DefaultHttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set("transfer-encoding", "chunked");
        up.writeInbound(head);

        for (long ms = 0; ms < 3 * KEEP_ALIVE_MS; ms += 300) { // a stream three keep-alive periods long
            relay.advanceClient(300);
            up.writeInbound(new DefaultHttpContent(Unpooled.wrappedBuffer(new byte[] {'.'})));
            drainClient();
        }
        assertThat(relay.client.isActive()).as("a response in progress is not idleness").isTrue();
        up.writeInbound(new DefaultLastHttpContent());
        drainClient();

        relay.advanceClient(KEEP_ALIVE_MS - 1);
        assertThat(relay.client.isActive()).isTrue();
        relay.advanceClient(KEEP_ALIVE_MS);
        assertThat(relay.client.isActive()).isFalse();
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrderOneAtATime() {
        relay.client.writeInbound(post("/a", CHAT), post("/b", CHAT));
        EmbeddedChannel up = relay.upstream("n1");
        FullHttpRequest first = up.readOutbound();
        assertThat(first.uri()).isEqualTo("/a");
        first.release();
        assertThat(up.outboundMessages()).as("the second waits for the first's response").isEmpty();
        DefaultHttpResponse ok = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        ok.headers().setInt("content-length", 0);
        up.writeInbound(ok, new DefaultLastHttpContent());

        FullHttpRequest second = up.readOutbound();
        assertThat(second.uri()).isEqualTo("/b");
        second.release();
        drainClient();
    }

    @Test
    void aPipelinedRequestThatCannotBeFramedIsAnsweredInItsTurnAndNothingAfterItIsRead() {
        FullHttpRequest bad = post("/bad", CHAT);
        bad.setDecoderResult(DecoderResult.failure(new IllegalArgumentException("framing")));
        relay.client.writeInbound(post("/a", CHAT), bad, post("/smuggled", CHAT));
        EmbeddedChannel up = relay.upstream("n1");
        answer(up);

        HttpResponse first = relay.client.readOutbound();
        assertThat(first.status().code()).isEqualTo(200);
        ReferenceCountUtil.release(first);
        drainUntilStatus(400);
        assertThat(relay.client.isActive()).isFalse();
        assertThat(up.outboundMessages()).as("the request after the bad one never reached the node").isEmpty();
        assertThat(relay.connections("n1")).isEqualTo(1);
    }

    private void drainUntilStatus(int status) {
        Object o;
        boolean seen = false;
        while ((o = relay.client.readOutbound()) != null) {
            if (o instanceof HttpResponse r && r.status().code() == status) {
                seen = true;
            }
            ReferenceCountUtil.release(o);
        }
        assertThat(seen).as("a %d answer", status).isTrue();
    }

    @Test
    void aDrainingProxyClosesTheConnectionAfterItsCurrentResponse() {
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        relay.draining.begin();
        answer(relay.upstream("n1"));

        assertThat(relay.client.isActive()).isFalse();
        drainClient();
    }
}
