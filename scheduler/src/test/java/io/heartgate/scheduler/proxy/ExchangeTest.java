package io.heartgate.scheduler.proxy;

import static io.heartgate.scheduler.proxy.EmbeddedRelay.CHAT;
import static io.heartgate.scheduler.proxy.EmbeddedRelay.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.proxy.EmbeddedRelay.Accept;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.trust.ApiKeys;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The relay on embedded channels and a fake clock: every timing exact, every failure rule on the relay itself. */
class ExchangeTest {

    private EmbeddedRelay relay;

    @AfterEach
    void tearDown() {
        relay.close();
    }

    private static HttpResponse head(int status, String... headers) {
        HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status));
        for (int i = 0; i < headers.length; i += 2) {
            r.headers().set(headers[i], headers[i + 1]);
        }
        return r;
    }

    private static HttpContent chunk(String text) {
        return new DefaultHttpContent(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
    }

    private static LastHttpContent last(String text) {
        return new DefaultLastHttpContent(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
    }

    /** Reads what the node received as one request, releasing it. */
    private static FullHttpRequest received(EmbeddedChannel up) {
        FullHttpRequest r = up.readOutbound();
        assertThat(r).as("a request reached the node").isNotNull();
        r.release();
        return r;
    }


    private HttpResponse clientHead() {
        HttpResponse r = relay.client.readOutbound();
        if (r instanceof FullHttpResponse full) {
            full.retain(); // read by the caller; released with the channel
        }
        return r;
    }

    @Test
    void theSlotIsFreeBeforeTheLastByteIsWrittenToTheClient() {
        relay = new EmbeddedRelay("n1");
        List<Integer> inFlightAtLastWrite = new ArrayList<>();
        relay.client.pipeline().addFirst(new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                if (msg instanceof LastHttpContent) {
                    inFlightAtLastWrite.add(relay.node("n1").inFlight().get());
                }
                ctx.write(msg, promise);
            }
        });
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel up = relay.upstream("n1");
        received(up);
        up.writeInbound(head(200, "content-type", "text/event-stream", "transfer-encoding", "chunked"));
        up.writeInbound(chunk("data: a\n\n"));
        up.writeInbound(last("data: [DONE]\n\n"));

        assertThat(relay.clientText()).isEqualTo("[200]data: a\n\ndata: [DONE]\n\n");
        assertThat(inFlightAtLastWrite).as("a client that sends its next turn at once finds the slot free")
                .containsExactly(0);
    }

    @Test
    void relaysTheResponseWithItsHeadersAndPoolsTheConnectionForTheNextRequest() {
        relay = new EmbeddedRelay("n1");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));

        EmbeddedChannel up = relay.upstream("n1");
        FullHttpRequest sent = received(up);
        assertThat(sent.uri()).isEqualTo("/v1/chat/completions");
        assertThat(sent.headers().get("host")).isEqualTo("127.0.0.1:9000");
        assertThat(sent.headers().get("x-forwarded-host")).isEqualTo("front.example");
        assertThat(relay.node("n1").inFlight().get()).isEqualTo(1);

        up.writeInbound(head(200, "content-type", "text/event-stream", "transfer-encoding", "chunked"));
        up.writeInbound(chunk("data: a\n\n"));
        assertThat(relay.counters.activeStreams()).isEqualTo(1);
        HttpResponse h = relay.client.readOutbound();
        assertThat(h.headers().get("x-upstream-node")).isEqualTo("n1");
        assertThat(h.headers().get("x-accel-buffering")).isEqualTo("no");
        up.writeInbound(last("data: [DONE]\n\n"));

        assertThat(relay.clientText()).isEqualTo("data: a\n\ndata: [DONE]\n\n");
        assertThat(relay.node("n1").inFlight().get()).isZero();
        assertThat(relay.counters.activeStreams()).isZero();
        assertThat(relay.pool.idleCount()).isEqualTo(1);

        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        assertThat(relay.connections("n1")).as("the pooled connection carried the second request").isEqualTo(1);
        received(up);
        up.writeInbound(head(200, "content-length", "2"), last("ok"));
        assertThat(relay.clientText()).isEqualTo("[200]ok");
        assertThat(relay.client.isActive()).isTrue();
    }

    @Test
    void noResponseHeadWithinTheFirstByteTimeoutIs504AtTheFirstSweepPastTheDeadline() {
        relay = new EmbeddedRelay("n1", "n2");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel up = relay.upstream("n1");
        received(up);

        relay.advance(999);
        assertThat(relay.client.outboundMessages()).isEmpty();
        relay.advance(1);

        assertThat(relay.clientText()).startsWith("[504]").contains("upstream_timeout")
                .contains("node n1 did not answer within 1000 ms");
        assertThat(up.isActive()).as("the node's connection is closed").isFalse();
        assertThat(relay.connections("n2")).as("no retry after a timeout").isZero();
        assertThat(relay.counters.get(Counter.TIMEOUTS)).isEqualTo(1);
        assertThat(relay.counters.errors(ErrorType.UPSTREAM_TIMEOUT)).isEqualTo(1);
        assertThat(relay.node("n1").inFlight().get()).isZero();
        assertThat(relay.health.isEjected("n1")).isFalse();
    }

    @Test
    void aResponseSilentForLongerThanTheIdleTimeoutIsCutWhileOneWithRecentChunksGoesOn() {
        relay = new EmbeddedRelay("n1");
        relay.advance(0); // idle checks run now and then once a second
        relay.client.writeInbound(post("/api/generate", CHAT));
        EmbeddedChannel up = relay.upstream("n1");
        received(up);
        up.writeInbound(head(200, "content-type", "application/x-ndjson", "transfer-encoding", "chunked"),
                chunk("{}\n"));

        relay.advance(700);
        up.writeInbound(chunk("{}\n")); // 300 ms before the check: under the 400 ms idle timeout
        relay.advance(300);
        assertThat(relay.client.isActive()).isTrue();

        relay.advance(999);
        assertThat(relay.client.isActive()).isTrue();
        relay.advance(1); // the next check: 1000 ms since the last chunk

        assertThat(relay.client.isActive()).as("the client sees a truncated stream").isFalse();
        assertThat(up.isActive()).isFalse();
        assertThat(relay.counters.get(Counter.TIMEOUTS)).isEqualTo(1);
        assertThat(relay.counters.activeStreams()).isZero();
        relay.clientText();
    }

    @Test
    void refusedConnectsAreRetriedOnNodesNotTriedThenAnswered502WithTheLastFailure() {
        relay = new EmbeddedRelay("n1", "n2", "n3");
        relay.accept.replaceAll((id, a) -> Accept.REFUSE);

        relay.client.writeInbound(post("/v1/chat/completions", CHAT));

        assertThat(relay.connections("n1") + relay.connections("n2") + relay.connections("n3")).isEqualTo(3);
        assertThat(relay.clientText()).startsWith("[502]").contains("upstream_unreachable")
                .containsPattern("3 tried; last: n[123]: ConnectException: Connection refused");
        assertThat(relay.counters.get(Counter.CONNECT_FAILURES)).isEqualTo(3);
        assertThat(relay.counters.get(Counter.RETRIES)).isEqualTo(2);
        assertThat(relay.nodes).allSatisfy(n -> assertThat(n.inFlight().get()).isZero());
    }

    @Test
    void aConnectThatCompletesLaterCarriesTheRequestAndOneThatFailsGoesToTheNextNode() {
        relay = new EmbeddedRelay("n1", "n2");
        relay.accept.put("n1", Accept.LATER);
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        assertThat(relay.upstream("n1").outboundMessages()).isEmpty();

        relay.pending.poll().setFailure(new ConnectException("timed out"));

        EmbeddedChannel up = relay.upstream("n2");
        received(up);
        up.writeInbound(head(200, "content-length", "2"), last("ok"));
        assertThat(relay.clientText()).isEqualTo("[200]ok");
    }

    @Test
    void aNodesOverloadAnswerIsRetriedElsewhereAndPassedOnWhenNoOtherNodeIsLeft() {
        relay = new EmbeddedRelay("n1", "n2");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel first = relay.upstream("n1");
        received(first);
        first.writeInbound(head(503, "content-length", "4"), last("busy"));
        EmbeddedChannel second = relay.upstream("n2");
        received(second);
        second.writeInbound(head(429, "content-length", "4", "retry-after", "3"), last("slow"));

        HttpResponse passed = relay.client.readOutbound();
        assertThat(passed.status().code()).as("the last node's own answer").isEqualTo(429);
        assertThat(passed.headers().get("retry-after")).isEqualTo("3");
        assertThat(relay.clientText()).isEqualTo("slow");
        assertThat(relay.counters.get(Counter.OVERLOAD_ANSWERS)).isEqualTo(1);
        assertThat(relay.health.isEjected("n1")).isFalse();
        assertThat(relay.pool.idleCount()).as("both connections stay usable").isEqualTo(2);
    }

    /** One node, n1, that has received a chat request; returns its connection. */
    private EmbeddedChannel chatSentToOneNode() {
        relay = new EmbeddedRelay("n1");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel up = relay.upstream("n1");
        received(up);
        return up;
    }

    /** Nodes n1 and n2; a request that n1 has begun to answer 503 with 4 bytes of 40; returns n1's connection. */
    private EmbeddedChannel busyAnswerBegun() {
        relay = new EmbeddedRelay("n1", "n2");
        relay.advance(0); // idle checks run now and then once a second
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel first = relay.upstream("n1");
        received(first);
        first.writeInbound(head(503, "content-length", "40"), chunk("busy"));
        return first;
    }

    @Test
    void aBusyAnswerWhoseBodyStallsIsGivenUpAtTheIdleTimeoutAndRetriedElsewhere() {
        EmbeddedChannel first = busyAnswerBegun();
        assertThat(relay.connections("n2")).as("still reading the busy answer away").isZero();

        relay.advance(999);
        assertThat(relay.connections("n2")).isZero();
        relay.advance(1); // the next check: 1000 ms without a byte, over the 400 ms idle timeout

        assertThat(first.isActive()).as("the stalled connection is closed").isFalse();
        assertThat(relay.node("n1").inFlight().get()).as("its slot is given back").isZero();
        EmbeddedChannel second = relay.upstream("n2");
        received(second);
        second.writeInbound(head(200, "transfer-encoding", "chunked"), chunk("a"));
        relay.advance(300);
        second.writeInbound(last("b"));
        assertThat(relay.clientText()).isEqualTo("[200]ab");
        assertThat(relay.counters.get(Counter.RETRIES)).isEqualTo(1);
        assertThat(relay.health.isEjected("n1")).isFalse();
    }

    @Test
    void aBusyAnswerCutShortLeavesNoStaleIdleClockForTheRetry() {
        EmbeddedChannel first = busyAnswerBegun();
        first.close(); // the node drops the connection partway through its busy answer

        EmbeddedChannel second = relay.upstream("n2");
        received(second);
        relay.advance(900); // under the first-byte timeout, over the idle timeout
        second.writeInbound(head(200, "transfer-encoding", "chunked"));
        relay.advance(100); // an idle check: 100 ms since the head, not 1000 since the busy answer
        assertThat(relay.client.isActive()).as("the retry's answer is not cut").isTrue();
        second.writeInbound(chunk("a"), last("b"));
        assertThat(relay.clientText()).isEqualTo("[200]ab");
        assertThat(relay.counters.get(Counter.TIMEOUTS)).isZero();
    }

    @Test
    void tokensTheNodeReportedBeforeTheClientHungUpAreCounted() {
        EmbeddedChannel up = chatSentToOneNode();
        up.writeInbound(head(200, "content-type", "text/event-stream", "transfer-encoding", "chunked"),
                chunk("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n"),
                chunk("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":1,"
                        + "\"total_tokens\":13}}\n\n"));

        relay.client.close(); // before the node's data: [DONE] and the end of its body

        assertThat(relay.registry.get("heartgate_tokens").tag("type", "prompt").counter().count()).isEqualTo(12);
        assertThat(relay.registry.get("heartgate_tokens").tag("type", "completion").counter().count()).isEqualTo(1);
        assertThat(relay.counters.get(Counter.CLIENT_CANCELLATIONS)).isEqualTo(1);
    }

    /** Sends the chat request as key {@code key} on {@code client}; the node n1 receives it. */
    private EmbeddedChannel chatAs(EmbeddedChannel client, String path, String key) {
        FullHttpRequest r = post(path, CHAT);
        r.headers().set("authorization", "Bearer " + key);
        client.writeInbound(r);
        EmbeddedChannel up = relay.upstream("n1");
        received(up);
        return up;
    }

    /** Starts a relay to node n1 whose one API key, {@code name}'s, has {@code tpm=}{@code tpm}; returns the key. */
    private String relayWithTokenLimit(String name, int tpm) {
        String key = "hg-" + name + "-key";
        ApiKeys keys = ApiKeys.parse(
                name + " " + ApiKeys.hash(key) + " tpm=" + tpm + "\n");
        relay = new EmbeddedRelay(new Stages.Access(() -> keys, null, false), "n1");
        return key;
    }

    /** Sends one more request as {@code key}, which the node answers: the key's tokens left, from the answer's headers. */
    private String tokensLeft(String key) {
        EmbeddedChannel client = relay.newClient();
        EmbeddedChannel up = chatAs(client, "/api/chat", key);
        up.writeInbound(head(200, "content-length", "2"), last("{}"));
        HttpResponse answer = client.readOutbound();
        String left = answer.headers().get("x-ratelimit-remaining-tokens");
        Object rest;
        while ((rest = client.readOutbound()) != null) {
            ReferenceCountUtil.release(rest);
        }
        return left;
    }

    @Test
    void aClientLeavingAStreamBeforeItsCountsIsChargedAnEstimateToItsTokenLimit() {
        String key = relayWithTokenLimit("dave", 1000);
        EmbeddedChannel up = chatAs(relay.client, "/api/chat", key);
        up.writeInbound(head(200, "content-type", "application/x-ndjson", "transfer-encoding", "chunked"));
        for (int i = 0; i < 10; i++) {
            up.writeInbound(chunk("{\"model\":\"llama3:8b\",\"message\":{\"role\":\"assistant\",\"content\":\"t\"},"
                    + "\"done\":false}\n"));
        }
        relay.client.close(); // ten tokens in, before Ollama's final object with its counts

        long promptEstimate = CHAT.getBytes(StandardCharsets.UTF_8).length / KeyLimits.BYTES_PER_PROMPT_TOKEN;
        assertThat(tokensLeft(key)).isEqualTo(Long.toString(1000 - promptEstimate - 10));
        assertThat(relay.registry.find("heartgate_tokens").counters()).as("an estimate is no reported count")
                .allMatch(c -> c.count() == 0);
    }

    @Test
    void aClientLeavingBeforeTheAnswersHeadIsChargedItsPromptsEstimate() {
        String key = relayWithTokenLimit("gina", 1000);
        chatAs(relay.client, "/v1/chat/completions", key); // a whole answer: its head comes when generation ends
        relay.client.close(); // the node has read the prompt

        long promptEstimate = CHAT.getBytes(StandardCharsets.UTF_8).length / KeyLimits.BYTES_PER_PROMPT_TOKEN;
        assertThat(promptEstimate).isPositive();
        assertThat(tokensLeft(key)).isEqualTo(Long.toString(1000 - promptEstimate));
        assertThat(relay.counters.get(Counter.CLIENT_CANCELLATIONS)).isEqualTo(1);
    }

    @Test
    void anSseRequestLeftBeforeItsHeadIsChargedNothingWhenStreamsAreNotAllAskedForUsage() {
        String key = relayWithTokenLimit("hugo", 1000);
        FullHttpRequest r = post("/v1/chat/completions", "{\"model\":\"llama3:8b\",\"stream\":true,\"messages\":[]}");
        r.headers().set("authorization", "Bearer " + key);
        relay.client.writeInbound(r);
        received(relay.upstream("n1"));
        relay.client.close();
        assertThat(tokensLeft(key)).as("finished, such a stream would not be counted either").isEqualTo("1000");
    }

    /**
     * Starts a relay to n1 (llama) and n2 (llama and qwen), each of capacity 1, with two keys: {@code
     * low}, and {@code high} of priority 1.
     */
    private void relayWithPriorityKeys() {
        ApiKeys keys = ApiKeys.parse(
                "low " + ApiKeys.hash("hg-low-key") + "\n"
                + "high " + ApiKeys.hash("hg-high-key") + " priority=1\n");
        relay = new EmbeddedRelay(new Stages.Access(() -> keys, null, false), "n1", "n2");
        relay.nodeBeats("n1", b -> b.capacity(1));
        relay.nodeBeats("n2", b -> b.capacity(1).models(List.of("llama3:8b", "qwen3:4b")));
    }

    /** Sends a chat request for {@code body} as {@code key} on a new client connection; returns the connection. */
    private EmbeddedChannel chatOnNewClient(String key, String body) {
        EmbeddedChannel client = relay.newClient();
        FullHttpRequest r = post("/v1/chat/completions", body);
        r.headers().set("authorization", "Bearer " + key);
        client.writeInbound(r);
        return client;
    }

    @Test
    void aRetryDoesNotTakeASlotAheadOfAHigherClassWaitingForAnotherModelOnTheSameNode() {
        relayWithPriorityKeys();
        String qwen = "{\"model\":\"qwen3:4b\",\"messages\":[]}";
        EmbeddedChannel low = chatOnNewClient("hg-low-key", CHAT);
        EmbeddedChannel lowsNode = relay.upstream("n1");
        received(lowsNode);
        chatOnNewClient("hg-high-key", qwen);
        received(relay.upstream("n2"));
        EmbeddedChannel waiting = chatOnNewClient("hg-high-key", qwen);
        assertThat(relay.queue.depth()).isEqualTo(1);
        relay.nodeBeats("n2", b -> b.capacity(2)); // room on n2 that no freed slot announced (the sweep would)

        lowsNode.close(); // reset before the head: the low request is retried on n2, the only other node
        low.runPendingTasks();
        waiting.runPendingTasks();

        assertThat(relay.connections("n2")).isEqualTo(2);
        FullHttpRequest sent = relay.upstream("n2").readOutbound();
        assertThat(sent.content().toString(StandardCharsets.UTF_8)).as("n2's new slot went to the waiting high request")
                .contains("qwen3:4b");
        sent.release();
        assertThat(relay.queue.depth()).as("the low retry waits its turn").isEqualTo(1);
        assertThat(relay.node("n2").inFlight().get()).isEqualTo(2);
    }

    @Test
    void aSlotFreedOnANodeThatNowServesAWaitingModelServesItAtOnce() {
        relay = new EmbeddedRelay("n1", "n2");
        relay.nodeBeats("n1", b -> b.capacity(1));
        relay.nodeBeats("n2", b -> b.capacity(1).models(List.of("qwen3:4b")));
        String qwen = "{\"model\":\"qwen3:4b\",\"messages\":[]}";
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel n1 = relay.upstream("n1");
        received(n1);
        relay.newClient().writeInbound(post("/v1/chat/completions", qwen));
        received(relay.upstream("n2"));
        EmbeddedChannel waiting = relay.newClient();
        waiting.writeInbound(post("/v1/chat/completions", qwen));
        assertThat(relay.queue.depth()).isEqualTo(1);
        relay.nodeServes("n1", "llama3:8b", "qwen3:4b"); // n1 loaded qwen meanwhile

        n1.writeInbound(head(200, "content-length", "2"), last("ok")); // the llama answer ends
        waiting.runPendingTasks();

        assertThat(relay.queue.depth()).as("served without waiting for a sweep").isZero();
        assertThat(relay.node("n1").inFlight().get()).isEqualTo(1);
    }

    @Test
    void aCallThatIsNoGenerationLeftMidwayIsChargedNothing() {
        String key = relayWithTokenLimit("fred", 1000);
        EmbeddedChannel up = chatAs(relay.client, "/api/embed", key); // progress lines, as a model pull sends
        up.writeInbound(head(200, "content-type", "application/x-ndjson", "transfer-encoding", "chunked"));
        for (int i = 0; i < 50; i++) {
            up.writeInbound(chunk("{\"status\":\"pulling\",\"completed\":" + i + "}\n"));
        }
        relay.client.close();
        assertThat(tokensLeft(key)).isEqualTo("1000");
    }

    @Test
    void aCutSseStreamIsChargedNoEstimateWhenStreamsAreNotAllAskedForUsage() {
        String key = relayWithTokenLimit("erin", 1000);
        EmbeddedChannel up = chatAs(relay.client, "/v1/chat/completions", key);
        up.writeInbound(head(200, "content-type", "text/event-stream", "transfer-encoding", "chunked"),
                chunk("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"));
        relay.client.close();
        assertThat(tokensLeft(key)).as("finished, such a stream would not be counted either").isEqualTo("1000");
    }

    @Test
    void anAnswerToARequestNamingNoModelIsCountedToo() {
        relay = new EmbeddedRelay("n1"); // vLLM, TGI and llama.cpp serve a body without "model"
        relay.client.writeInbound(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
        EmbeddedChannel up = relay.upstream("n1");
        received(up);
        up.writeInbound(head(200, "content-type", "application/json", "transfer-encoding", "chunked"),
                last("{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":12,"
                        + "\"completion_tokens\":3,\"total_tokens\":15}}"));
        assertThat(relay.clientText()).startsWith("[200]");
        assertThat(relay.registry.get("heartgate_tokens").tag("model", "none").tag("type", "prompt").counter().count())
                .isEqualTo(12);
        assertThat(relay.registry.get("heartgate_tokens").tag("model", "none").tag("type", "completion").counter()
                .count()).isEqualTo(3);
    }

    @Test
    void aWholeAnswersUsageThatMoreThanTheWindowFollowsIsCounted() {
        EmbeddedChannel up = chatSentToOneNode();
        String after = ",\"prompt_token_ids\":[" + "1234,".repeat(2000) + "1]}"; // vLLM's, with return_token_ids
        up.writeInbound(head(200, "content-type", "application/json", "transfer-encoding", "chunked"),
                chunk("{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":2001,"),
                chunk("\"completion_tokens\":3,\"total_tokens\":2004}"), chunk(after), last(""));
        assertThat(relay.clientText()).startsWith("[200]");
        assertThat(relay.registry.get("heartgate_tokens").tag("type", "prompt").counter().count()).isEqualTo(2001);
        assertThat(relay.registry.get("heartgate_tokens").tag("type", "completion").counter().count()).isEqualTo(3);
    }

    @Test
    void aNodeServingAnyModelLabelsItsAnswersOtherNotTheClientsName() {
        relay = new EmbeddedRelay("n1");
        relay.nodeServes("n1"); // lists none: serves whatever name a client sends
        for (int i = 0; i < 3; i++) {
            relay.client.writeInbound(post("/v1/chat/completions", "{\"model\":\"made-up-" + i + "\",\"messages\":[]}"));
            EmbeddedChannel up = relay.upstream("n1");
            received(up);
            up.writeInbound(head(200, "content-length", "2"), last("ok"));
            assertThat(relay.clientText()).isEqualTo("[200]ok");
        }
        // One label for every name (the first-byte timer takes the same one; this clock does not move).
        assertThat(relay.registry.getMeters()).filteredOn(m -> m.getId().getName().equals("heartgate_proxy_request_duration"))
                .extracting(m -> m.getId().getTag("model")).containsExactly("other");
        assertThat(relay.registry.getMeters()).filteredOn(m -> m.getId().getName().equals("heartgate_tokens"))
                .extracting(m -> m.getId().getTag("model")).containsOnly("other");
    }

    @Test
    void aPooledConnectionTheNodeClosedIsSentAgainOnceOnANewConnectionToTheSameNode() {
        relay = new EmbeddedRelay("n1", "n2");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel up = relay.upstream("n1");
        received(up);
        up.writeInbound(head(200, "content-length", "2"), last("ok"));
        relay.clientText();
        // The rotation gives n2 the second request, n1 the third.
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        received(relay.upstream("n2"));
        relay.upstream("n2").writeInbound(head(200, "content-length", "2"), last("ok"));
        relay.clientText();

        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        received(up);
        up.close(); // the node's keep-alive timeout raced the request

        assertThat(relay.connections("n1")).isEqualTo(2);
        EmbeddedChannel fresh = relay.upstream("n1");
        received(fresh);
        fresh.writeInbound(head(200, "content-length", "2"), last("ok"));
        assertThat(relay.clientText()).isEqualTo("[200]ok");
        assertThat(relay.counters.get(Counter.STALE_CONNECTIONS)).isEqualTo(1);
        assertThat(relay.counters.get(Counter.RETRIES)).isZero();
        assertThat(relay.counters.get(Counter.UPSTREAM_RESETS)).isZero();
    }

    @Test
    void aResetBeforeTheHeadIsRetriedAndOneMidResponseCutsTheClient() {
        relay = new EmbeddedRelay("n1", "n2");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel n1 = relay.upstream("n1");
        received(n1);
        n1.close();
        EmbeddedChannel n2 = relay.upstream("n2");
        received(n2);
        assertThat(relay.counters.get(Counter.UPSTREAM_RESETS)).isEqualTo(1);

        n2.writeInbound(head(200, "transfer-encoding", "chunked"), chunk("par"));
        n2.close();

        assertThat(relay.clientText()).isEqualTo("[200]par");
        assertThat(relay.client.isActive()).as("no clean end: the connection is cut").isFalse();
        assertThat(relay.counters.get(Counter.RETRIES)).isEqualTo(1);
    }

    @Test
    void aClientThatHangsUpClosesTheNodesConnectionAndIsNeverTheNodesFailure() {
        EmbeddedChannel up = chatSentToOneNode();

        relay.client.close();

        assertThat(up.isActive()).isFalse();
        assertThat(relay.counters.get(Counter.CLIENT_CANCELLATIONS)).isEqualTo(1);
        assertThat(relay.node("n1").inFlight().get()).isZero();
        assertThat(relay.health.isEjected("n1")).isFalse();
    }

    @Test
    void aClientThatHangsUpWhileItsConnectionOpensLeavesThatConnectionToThePool() {
        relay = new EmbeddedRelay("n1");
        relay.accept.put("n1", Accept.LATER);
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));

        relay.client.close();
        relay.pending.poll().setSuccess();

        assertThat(relay.upstream("n1").outboundMessages()).isEmpty();
        assertThat(relay.pool.idleCount()).isEqualTo(1);
        assertThat(relay.counters.get(Counter.CLIENT_CANCELLATIONS)).isEqualTo(1);
    }

    @Test
    void aClientLeavingOrTheNodeClosingWhileAnOverloadAnswerIsReadAwayEndsCleanly() {
        relay = new EmbeddedRelay("n1", "n2");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel n1 = relay.upstream("n1");
        received(n1);
        n1.writeInbound(head(503, "content-length", "100"), chunk("busy"));
        n1.close(); // the node ends its overload answer by closing: the retry goes on

        EmbeddedChannel n2 = relay.upstream("n2");
        received(n2);
        n2.writeInbound(head(200, "content-length", "2"), last("ok"));
        assertThat(relay.clientText()).isEqualTo("[200]ok");

        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        EmbeddedChannel next = relay.upstream(relay.connections("n1") > 1 ? "n1" : "n2");
        received(next);
        next.writeInbound(head(429, "content-length", "100"), chunk("slow"));
        relay.client.close();

        assertThat(next.isActive()).isFalse();
        assertThat(relay.counters.get(Counter.CLIENT_CANCELLATIONS)).isEqualTo(1);
        assertThat(relay.nodes).allSatisfy(n -> assertThat(n.inFlight().get()).isZero());
    }

    @Test
    void aFirstByteTimeoutDuringAnInformationalAnswerIs504() {
        EmbeddedChannel up = chatSentToOneNode();
        up.writeInbound(head(100)); // its empty last chunk never comes

        relay.advance(1000);

        assertThat(relay.clientText()).startsWith("[504]");
        assertThat(up.isActive()).isFalse();
    }

    /** Returns the node the request is on now: the one holding an in-flight count. */
    private String holding() {
        return relay.nodes.stream().filter(n -> n.inFlight().get() == 1).map(n -> n.id()).reduce((a, b) -> a + "," + b)
                .orElse("none");
    }

    @Test
    void everyAttemptGivesItsInFlightCountBack() {
        relay = new EmbeddedRelay("n1", "n2", "n3");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        assertThat(holding()).isEqualTo("n1");
        EmbeddedChannel first = relay.upstream("n1");
        received(first);
        first.close(); // reset: retried

        String second = holding();
        assertThat(second).isIn("n2", "n3");
        EmbeddedChannel up2 = relay.upstream(second);
        received(up2);
        up2.writeInbound(head(503, "content-length", "1"), last("x")); // overload: retried

        String third = holding();
        assertThat(third).isIn("n2", "n3").isNotEqualTo(second);
        EmbeddedChannel up3 = relay.upstream(third);
        received(up3);
        up3.writeInbound(head(200, "transfer-encoding", "chunked"), chunk("a"));
        up3.close(); // cut mid-response

        assertThat(holding()).isEqualTo("none");
        assertThat(relay.client.isActive()).isFalse();
        relay.clientText();
    }

    @Test
    void informationalAnswersAreSkippedAndTheRealHeadRelayed() {
        EmbeddedChannel up = chatSentToOneNode();

        up.writeInbound(head(103, "link", "</x>"), LastHttpContent.EMPTY_LAST_CONTENT);
        up.writeInbound(head(200, "content-length", "2"), last("ok"));

        assertThat(relay.clientText()).isEqualTo("[200]ok");
    }

    @Test
    void withNoRoutableNodeTheRoutingStageAnswersItselfAndTheNextRequestIsServed() {
        relay = new EmbeddedRelay("n1");
        relay.client.writeInbound(post("/v1/chat/completions", "{\"model\":\"qwen2.5:7b\"}"));

        assertThat(relay.clientText()).startsWith("[404]").contains("model_not_found")
                .contains("no routable node serves model 'qwen2.5:7b'");
        assertThat(relay.counters.errors(ErrorType.MODEL_NOT_FOUND)).isEqualTo(1);
        assertThat(relay.connections("n1")).isZero();

        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        received(relay.upstream("n1"));
        assertThat(relay.counters.get(Counter.REQUESTS)).isEqualTo(2);
    }
}
