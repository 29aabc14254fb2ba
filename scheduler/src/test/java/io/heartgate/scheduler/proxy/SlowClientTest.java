package io.heartgate.scheduler.proxy;

import static io.heartgate.scheduler.proxy.EmbeddedRelay.BODY_MS;
import static io.heartgate.scheduler.proxy.EmbeddedRelay.HEADER_MS;
import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.request.ErrorType;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Clients that send slowly, on the proxy port's codec and a fake clock (header timeout 2 s, body
 * timeout 3 s, keep-alive 5 s; checks every 500 ms): a head trickled a byte at a time, or a body
 * trickled after its head, gets 408 {@code request_timeout} within a check of its timeout and the
 * connection closes; no node sees it. A client that sends its request promptly is untouched, and a
 * pipelining client stops being read once its queued bodies pass 1 MiB.
 */
class SlowClientTest {

    private static final long CHECK_MS = 500;
    private static final String BODY = "{\"model\":\"llama3:8b\",\"messages\":[]}";
    private static final String HEAD = "POST /v1/chat/completions HTTP/1.1\r\nHost: front.example\r\n"
            + "Content-Type: application/json\r\nContent-Length: " + BODY.length() + "\r\n\r\n";

    private EmbeddedRelay relay;

    @BeforeEach
    void setUp() {
        relay = new EmbeddedRelay("n1");
    }

    @AfterEach
    void tearDown() {
        relay.close();
    }

    private static void send(EmbeddedChannel c, String text) {
        c.writeInbound(Unpooled.copiedBuffer(text, StandardCharsets.US_ASCII));
    }

    private static String out(EmbeddedChannel c) {
        StringBuilder sb = new StringBuilder();
        ByteBuf b;
        while ((b = c.readOutbound()) != null) {
            sb.append(b.toString(StandardCharsets.UTF_8));
            b.release();
        }
        return sb.toString();
    }

    /** Sends {@code text} a byte every {@code everyMs}, advancing the clock; returns the ms it took, or -1 if closed first. */
    private long trickle(EmbeddedChannel c, String text, long everyMs) {
        long ms = 0;
        for (int i = 0; i < text.length(); i++) {
            if (!c.isActive()) {
                return -1;
            }
            send(c, text.substring(i, i + 1));
            relay.advanceAll(everyMs);
            ms += everyMs;
        }
        return ms;
    }

    @Test
    void aHeadTrickledAByteAt100MsGets408WithinACheckOfTheHeaderTimeout() {
        EmbeddedChannel c = relay.newRawClient(1 << 20);
        long took = trickle(c, HEAD, 100); // 120 bytes: 12 s at this pace
        assertThat(took).as("closed before the head was complete").isEqualTo(-1);
        String answer = out(c);
        assertThat(answer).startsWith("HTTP/1.1 408 Request Timeout").contains("connection: close")
                .contains("\"type\":\"request_timeout\"").contains("request head not complete within 2s");
        assertThat(relay.counters.errors(ErrorType.REQUEST_TIMEOUT)).isEqualTo(1);
        assertThat(relay.connections("n1")).as("no node saw it").isZero();
    }

    @Test
    void theHeadTimeoutCountsFromItsFirstByteAndFiresWithinOneCheck() {
        EmbeddedChannel c = relay.newRawClient(1 << 20);
        relay.advanceAll(4000); // idle, under the keep-alive timeout: no clock runs yet
        send(c, "POST /v1/chat");
        long ms = 0;
        while (c.isActive() && ms < 10_000) {
            relay.advanceAll(100);
            ms += 100;
        }
        assertThat(ms).isBetween(HEADER_MS, HEADER_MS + CHECK_MS);
        assertThat(out(c)).startsWith("HTTP/1.1 408");
    }

    @Test
    void aBodyTrickledAfterItsHeadGets408WithinACheckOfTheBodyTimeout() {
        EmbeddedChannel c = relay.newRawClient(1 << 20);
        send(c, HEAD);
        long ms = 0;
        for (int i = 0; c.isActive() && i < BODY.length(); i++) {
            send(c, BODY.substring(i, i + 1));
            relay.advanceAll(200); // 35 bytes: 7 s at this pace
            ms += 200;
        }
        assertThat(c.isActive()).isFalse();
        assertThat(ms).isBetween(BODY_MS, BODY_MS + CHECK_MS);
        assertThat(out(c)).startsWith("HTTP/1.1 408").contains("request body not complete within 3s");
        assertThat(relay.connections("n1")).isZero();
    }

    @Test
    void aPromptClientIsUntouchedAndItsRequestReachesTheNode() {
        EmbeddedChannel c = relay.newRawClient(1 << 20);
        trickle(c, HEAD + BODY, 10); // 1.6 s in all: under either timeout
        relay.advanceAll(CHECK_MS);
        assertThat(c.isActive()).isTrue();
        assertThat(relay.connections("n1")).isEqualTo(1);
        assertThat(relay.counters.errors(ErrorType.REQUEST_TIMEOUT)).isZero();
    }

    @Test
    void aClosedConnectionLeavesNoCheckOnItsLoop() {
        EmbeddedChannel c = relay.newRawClient(1 << 20);
        assertThat(c.runScheduledPendingTasks()).as("nanoseconds to the connection's next check").isPositive();
        // The socket went away: what a transport tells the pipeline. (EmbeddedChannel.close() would
        // cancel every scheduled task itself, which a real loop does not.)
        c.pipeline().fireChannelInactive();
        // A check left queued would hold the closed connection and its buffers until it fired.
        assertThat(c.runScheduledPendingTasks()).as("nothing scheduled after the close").isEqualTo(-1);
    }

    private static void answerOn(EmbeddedChannel up) {
        HttpResponse r = new DefaultHttpResponse(
                HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        r.headers().set("content-length", "2");
        up.writeInbound(r, new DefaultLastHttpContent(Unpooled.copiedBuffer("{}",
                StandardCharsets.US_ASCII)));
    }

    @Test
    void aBlankLineAfterARequestIsNotTheStartOfAHead() {
        EmbeddedChannel c = relay.newRawClient(1 << 20);
        send(c, HEAD + BODY + "\r\n"); // a CRLF after the body, as some clients send
        answerOn(relay.upstream("n1"));
        relay.advanceAll(4000); // past the header timeout, under the keep-alive timeout
        assertThat(c.isActive()).isTrue();
        assertThat(out(c)).startsWith("HTTP/1.1 200").doesNotContain("408");
    }

    @Test
    void aPipelinedRequestIsTimedFromItsTurnNotWhileTheOneBeforeIsAnswered() {
        relay.close();
        relay = EmbeddedRelay.withStallRule(60_000, 0, "n1"); // a first-byte timeout longer than the wait
        EmbeddedChannel c = relay.newRawClient(1 << 20);
        send(c, HEAD + BODY); // its node takes 4 s, over the body timeout
        send(c, HEAD + BODY.substring(0, 10)); // the next one pipelined, its body on its way
        relay.advanceAll(4000);
        answerOn(relay.upstream("n1"));
        relay.advanceAll(1000);
        assertThat(c.isActive()).as("not timed out the moment its turn came").isTrue();
        send(c, BODY.substring(10));
        relay.advanceAll(100);
        assertThat(relay.counters.errors(ErrorType.REQUEST_TIMEOUT)).isZero();
        assertThat(out(c)).startsWith("HTTP/1.1 200").doesNotContain("408");
    }

    @Test
    void aPipeliningClientStopsBeingReadOnceItsQueuedBodiesPassOneMebibyte() {
        EmbeddedChannel c = relay.newRawClient(1 << 20);
        String big = "{\"model\":\"llama3:8b\",\"messages\":[],\"pad\":\"" + "x".repeat(300_000) + "\"}";
        String request = "POST /v1/chat/completions HTTP/1.1\r\nHost: front.example\r\nContent-Length: "
                + big.length() + "\r\n\r\n" + big;
        send(c, request); // the one in flight: its node has not answered
        int queued = 0;
        while (c.config().isAutoRead() && queued < 16) {
            send(c, request);
            queued++;
        }
        assertThat(c.config().isAutoRead()).isFalse();
        assertThat((long) queued * big.length()).as("bytes queued when reading stopped")
                .isBetween(ClientConnection.MAX_QUEUED_BYTES, ClientConnection.MAX_QUEUED_BYTES + big.length());
    }
}
