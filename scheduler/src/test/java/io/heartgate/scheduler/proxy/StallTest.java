package io.heartgate.scheduler.proxy;

import static io.heartgate.scheduler.proxy.EmbeddedRelay.CHAT;
import static io.heartgate.scheduler.proxy.EmbeddedRelay.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.status.Ejection;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The stall rule on a fake ticker, stall timeout 5 s (first byte 60 s, so only the rule acts): a
 * node that answers nothing while requests wait on it and its peer answers is ejected within a
 * check (1 s) of the timeout and its waiting requests move; a node busy streaming, or a fleet where
 * no node answers (a slow model), is not stalled; with the rule off nothing is ejected.
 */
class StallTest {

    private static final long STALL_MS = 5000;
    private static final String STREAM_CHAT = "{\"model\":\"llama3:8b\",\"stream\":true,\"messages\":[]}";

    private EmbeddedRelay relay;
    private long nowMs;

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
    }

    private record Sent(String node, EmbeddedChannel upstream) {
    }

    /** Sends one streaming chat on a new client connection; returns the node and connection it went to. */
    private Sent send() {
        return send(STREAM_CHAT);
    }

    private Sent send(String body) {
        relay.newClient().writeInbound(post("/v1/chat/completions", body));
        for (Map.Entry<String, List<EmbeddedChannel>> e : relay.opened.entrySet()) {
            for (EmbeddedChannel up : e.getValue()) {
                Object o = up.readOutbound();
                if (o != null) {
                    ReferenceCountUtil.release(o);
                    return new Sent(e.getKey(), up);
                }
            }
        }
        throw new AssertionError("the request reached no node");
    }

    private static HttpResponse head() {
        HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        r.headers().set("content-type", "text/event-stream").set("transfer-encoding", "chunked");
        return r;
    }

    private static void answer(EmbeddedChannel up) {
        up.writeInbound(head(), new DefaultLastHttpContent(Unpooled.copiedBuffer("data: [DONE]\n\n",
                StandardCharsets.UTF_8)));
    }

    private void tick() {
        nowMs += 100;
        relay.advance(100);
    }

    private boolean ejected(String id) {
        return relay.health.isEjected(id);
    }

    @Test
    void aNodeLoadingTheModelForTheStreamsWaitingOnItIsNotStalled() {
        relay = EmbeddedRelay.coldOllamaWithStallRule(60_000, STALL_MS, "n1", "n2");
        Sent first = send(); // both cold and empty: round robin takes n1, which must load the model
        Sent second = send(); // n1 is warm for it now (loading): the next request queues there
        assertThat(second.node()).isEqualTo(first.node());

        while (nowMs < 3 * STALL_MS) { // n2 has nothing to do; n1 says nothing for 15 s
            tick();
        }

        assertThat(ejected(first.node())).isFalse();
        assertThat(relay.health.stallCount()).isZero();
        answer(first.upstream());
        answer(second.upstream());
        assertThat(relay.nodes).allSatisfy(n -> assertThat(n.inFlight().loading("llama3:8b")).as("counts given back")
                .isZero());
    }

    @Test
    void aSilentNodeIsEjectedWithinACheckOfTheTimeoutAndItsWaitingRequestsMove() {
        relay = EmbeddedRelay.withStallRule(60_000, STALL_MS, "n1", "n2");
        List<EmbeddedChannel> stuck = new ArrayList<>();
        long firstStuckAt = -1;
        while (!ejected("n1") && nowMs < 20_000) {
            if (nowMs % 500 == 0) { // a request every 500 ms; n2 answers at once, n1 never does
                Sent s = send();
                if (s.node().equals("n2")) {
                    answer(s.upstream());
                } else {
                    stuck.add(s.upstream());
                    firstStuckAt = firstStuckAt < 0 ? nowMs : firstStuckAt;
                }
            }
            tick();
        }

        assertThat(ejected("n1")).isTrue();
        assertThat(nowMs - firstStuckAt).as("ms from the first stuck request to the ejection")
                .isBetween(STALL_MS, STALL_MS + 1000 + 100);
        assertThat(relay.health.ejection("n1")).map(Ejection::describe).get().asString()
                .startsWith("held: stalled: no first token for 5 s to streams waiting on it while n2, serving llama3:8b, answered");
        assertThat(relay.health.stallCount()).isEqualTo(1);
        assertThat(ejected("n2")).isFalse();

        tick(); // the next sweep moves what waits on the ejected node
        assertThat(stuck).allSatisfy(up -> assertThat(up.isActive()).as("closed, so n1 drops the work").isFalse());
        assertThat(relay.counters.get(Counter.RESCUED)).isEqualTo(stuck.size());
        for (int i = 0; i < 4; i++) {
            assertThat(send().node()).as("new requests avoid the ejected node").isEqualTo("n2");
        }
    }

    @Test
    void withEveryClientWaitingOnTheSilentNodeAnIdlePeerIsEnough() {
        relay = EmbeddedRelay.withStallRule(60_000, STALL_MS, "n1", "n2");
        Sent first = send();
        Sent second = send();
        Sent onN2 = first.node().equals("n2") ? first : second;
        answer(onN2.upstream()); // n2 answers its one request; from then on it has nothing to do
        Sent stuck = first.node().equals("n1") ? first : second;
        while (!ejected("n1") && nowMs < 20_000) {
            tick();
        }
        assertThat(nowMs).isBetween(STALL_MS, STALL_MS + 1000 + 100);
        assertThat(relay.health.ejection("n1")).map(Ejection::describe).get().asString().endsWith("had nothing to do");
        tick();
        assertThat(stuck.upstream().isActive()).isFalse();
    }

    @Test
    void aNodeBusyStreamingWhileItsQueueWaitsIsNotStalled() {
        relay = EmbeddedRelay.withStallRule(60_000, STALL_MS, "n1", "n2");
        EmbeddedChannel streaming = null;
        int waitingOnN1 = 0;
        while (nowMs < 15_000) {
            if (nowMs % 500 == 0) {
                Sent s = send();
                if (s.node().equals("n2")) {
                    answer(s.upstream());
                } else if (streaming == null) {
                    streaming = s.upstream();
                    streaming.writeInbound(head()); // one long stream; the rest queue behind it on n1
                } else {
                    waitingOnN1++;
                }
            }
            if (streaming != null && nowMs % 200 == 0) {
                streaming.writeInbound(new DefaultHttpContent(Unpooled.copiedBuffer("data: {}\n\n",
                        StandardCharsets.UTF_8)));
            }
            tick();
        }
        assertThat(waitingOnN1).as("requests that waited on n1 far beyond the stall timeout").isGreaterThan(5);
        assertThat(ejected("n1")).isFalse();
        assertThat(relay.health.stallCount()).isZero();
    }

    @Test
    void aLongNonStreamingGenerationIsNoEvidence() {
        relay = EmbeddedRelay.withStallRule(60_000, STALL_MS, "n1", "n2");
        int waitingOnN1 = 0;
        while (nowMs < 15_000) {
            if (nowMs % 500 == 0) {
                Sent s = send(CHAT); // stream absent on /v1: the answer comes whole, after the generation
                if (s.node().equals("n2")) {
                    answer(s.upstream());
                } else {
                    waitingOnN1++;
                }
            }
            tick();
        }
        assertThat(waitingOnN1).isGreaterThan(5);
        assertThat(ejected("n1")).isFalse();
    }

    @Test
    void anOllamaChatStreamsByDefault() {
        ByteBuf body = Unpooled.copiedBuffer("{\"model\":\"m\",\"messages\":[]}",
                StandardCharsets.UTF_8);
        assertThat(TopLevelFields.streams(body, "/api/chat")).isTrue();
        assertThat(TopLevelFields.streams(body, "/api/generate?x=1")).isTrue();
        assertThat(TopLevelFields.streams(body, "/v1/chat/completions")).isFalse();
        ByteBuf off = Unpooled.copiedBuffer(
                "{\"model\":\"m\",\"messages\":[{\"stream\":true}],\"stream\":false}", StandardCharsets.UTF_8);
        assertThat(TopLevelFields.streams(off, "/api/chat")).isFalse();
        body.release();
        off.release();
    }

    @Test
    void aWholeAnswerDisguisedByARepeatedStreamFlagIsNoEvidenceOfAStall() {
        relay = EmbeddedRelay.withStallRule(60_000, STALL_MS, "n1", "n2");
        Sent whole = send("{\"model\":\"llama3:8b\",\"stream\":true,\"messages\":[],\"stream\":false}");
        while (nowMs < 3 * STALL_MS) { // the node generates the whole answer, silent meanwhile; n2 idles
            tick();
        }
        assertThat(ejected(whole.node())).isFalse();
        assertThat(relay.health.stallCount()).isZero();
    }

    @Test
    void aRepeatedStreamFlagIsReadAsTheNodeReadsIt() {
        // The node keeps the last: a whole answer, which a first "true" must not pass off as a stream
        // (the stall rule would take the node generating it, silent meanwhile, for a stalled one).
        for (String json : new String[] {"{\"stream\":true,\"model\":\"m\",\"stream\":false}",
                                         "{\"model\":\"m\",\"stream\":1,\"messages\":[],\"stream\":\"no\"}"}) {
            ByteBuf body = Unpooled.copiedBuffer(json, StandardCharsets.UTF_8);
            assertThat(TopLevelFields.streams(body, "/v1/chat/completions")).as(json).isFalse();
            assertThat(body.readerIndex()).isZero();
            body.release();
        }
        ByteBuf on = Unpooled.copiedBuffer(
                "{\"stream\":false,\"model\":\"m\",\"stream\":true}", StandardCharsets.UTF_8);
        assertThat(TopLevelFields.streams(on, "/v1/chat/completions")).isTrue();
        on.release();
    }

    @Test
    void whenNoNodeServingTheModelAnswersNoneIsStalled() {
        relay = EmbeddedRelay.withStallRule(60_000, STALL_MS, "n1", "n2");
        while (nowMs < 15_000) {
            if (nowMs % 500 == 0) {
                send(); // a model slow to start everywhere: nobody answers yet
            }
            tick();
        }
        assertThat(ejected("n1") || ejected("n2")).isFalse();
    }

    @Test
    void withTheRuleOffASilentNodeWaitsForTheFirstByteTimeout() {
        relay = EmbeddedRelay.withStallRule(60_000, 0, "n1", "n2");
        while (nowMs < 15_000) {
            if (nowMs % 500 == 0) {
                Sent s = send();
                if (s.node().equals("n2")) {
                    answer(s.upstream());
                }
            }
            tick();
        }
        assertThat(ejected("n1")).isFalse();
    }
}
