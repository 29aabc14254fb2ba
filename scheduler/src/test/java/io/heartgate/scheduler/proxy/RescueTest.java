package io.heartgate.scheduler.proxy;

import static io.heartgate.scheduler.proxy.EmbeddedRelay.CHAT;
import static io.heartgate.scheduler.proxy.EmbeddedRelay.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Requests waiting on a node the table stops routing move to another node at the next sweep (at
 * most 100 ms), with their node's connection closed; a response already relaying is left alone.
 */
class RescueTest {

    private EmbeddedRelay relay;

    @BeforeEach
    void setUp() {
        relay = new EmbeddedRelay("n1", "n2");
    }

    @AfterEach
    void tearDown() {
        relay.close();
    }

    /** Sends one chat and returns the node it went to first. */
    private String sendChat() {
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        String first = relay.connections("n1") > 0 ? "n1" : "n2";
        FullHttpRequest r = relay.upstream(first).readOutbound();
        assertThat(r).isNotNull();
        r.release();
        return first;
    }

    private static HttpResponse head(int status, String... headers) {
        HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status));
        for (int i = 0; i < headers.length; i += 2) {
            r.headers().set(headers[i], headers[i + 1]);
        }
        return r;
    }

    private static void answer(EmbeddedChannel up, String body) {
        up.writeInbound(head(200, "content-length", String.valueOf(body.length())),
                new DefaultLastHttpContent(Unpooled.copiedBuffer(body, StandardCharsets.UTF_8)));
    }

    private static String other(String id) {
        return id.equals("n1") ? "n2" : "n1";
    }

    @Test
    void aRequestWaitingOnANodeThatTurnsDownMovesAtTheNextSweep() {
        String first = sendChat();
        EmbeddedChannel stuck = relay.upstream(first);
        relay.advance(100);
        assertThat(relay.connections(other(first))).as("nothing moves while the node is routable").isZero();

        relay.nodeBecomes(first, NodeState.DOWN);
        relay.advance(100);

        assertThat(stuck.isActive()).as("the hung node's connection is closed").isFalse();
        FullHttpRequest moved = relay.upstream(other(first)).readOutbound();
        assertThat(moved.uri()).isEqualTo("/v1/chat/completions");
        moved.release();
        answer(relay.upstream(other(first)), "ok");
        assertThat(relay.clientText()).isEqualTo("[200]ok");
        assertThat(relay.counters.get(Counter.RESCUED)).isEqualTo(1);
        assertThat(relay.counters.get(Counter.RETRIES)).isEqualTo(1);
    }

    @Test
    void aNodeThatLeavesTheTableLosesItsWaitingRequestsToo() {
        String first = sendChat();
        relay.nodeBecomes(first, null);
        relay.advance(100);
        FullHttpRequest moved = relay.upstream(other(first)).readOutbound();
        assertThat(moved).isNotNull();
        moved.release();
        assertThat(relay.counters.get(Counter.RESCUED)).isEqualTo(1);
    }

    @Test
    void aDrainingNodeKeepsTheWorkItHas() {
        String first = sendChat();
        relay.nodeBecomes(first, NodeState.DRAINING);
        relay.advance(100);
        assertThat(relay.connections(other(first))).isZero();
        answer(relay.upstream(first), "done");
        assertThat(relay.clientText()).isEqualTo("[200]done");
        assertThat(relay.counters.get(Counter.RESCUED)).isZero();
    }

    @Test
    void anEjectedNodeLosesItsWaitingRequestsWhileAnotherIsUsable() {
        String first = sendChat();
        for (int i = 0; i < 3; i++) {
            relay.health.connectFailed(first, relay.node(first).url(), "refused");
        }
        relay.advance(100);
        FullHttpRequest moved = relay.upstream(other(first)).readOutbound();
        assertThat(moved).isNotNull();
        moved.release();
        assertThat(relay.counters.get(Counter.RESCUED)).isEqualTo(1);
    }

    @Test
    void aResponseAlreadyRelayingIsNotMovedAndItsBreakIsCounted() {
        String first = sendChat();
        EmbeddedChannel up = relay.upstream(first);
        up.writeInbound(head(200, "content-type", "text/event-stream", "transfer-encoding", "chunked"));
        up.writeInbound(new DefaultHttpContent(Unpooled.copiedBuffer("data: a\n\n", StandardCharsets.UTF_8)));
        relay.nodeBecomes(first, NodeState.DOWN);
        relay.advance(100);
        assertThat(up.isActive()).as("a stream in progress keeps its node").isTrue();
        assertThat(relay.connections(other(first))).isZero();

        up.close(); // the node dies for real mid-stream
        assertThat(relay.clientText()).isEqualTo("[200]data: a\n\n");
        assertThat(relay.client.isActive()).as("cut, never a clean end").isFalse();
        assertThat(relay.counters.get(Counter.BROKEN_RESPONSES)).isEqualTo(1);
        assertThat(relay.counters.get(Counter.RESCUED)).isZero();
    }

    @Test
    void withNoRetryLeftTheClientGetsTheUsualUnreachableAnswer() {
        relay = new EmbeddedRelay("n1");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        ((FullHttpRequest) relay.upstream("n1").readOutbound()).release();
        relay.nodeBecomes("n1", NodeState.DOWN);
        relay.advance(100);
        assertThat(relay.clientText()).startsWith("[503]").contains("no_upstream");
    }
}
