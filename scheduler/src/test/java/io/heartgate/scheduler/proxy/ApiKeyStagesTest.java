package io.heartgate.scheduler.proxy;

import static io.heartgate.scheduler.proxy.EmbeddedRelay.CHAT;
import static io.heartgate.scheduler.proxy.EmbeddedRelay.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.scheduler.trust.UpstreamKey;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The API-key and upstream-key stages on the embedded relay: who gets through, and what the node sees. */
class ApiKeyStagesTest {

    private static final String ALICE = "hg-alice-key";
    private static final String BOB = "hg-bob-key";
    private final AtomicReference<ApiKeys> keys = new AtomicReference<>(ApiKeys.parse(
            "alice " + ApiKeys.hash(ALICE) + "\n"
            + "bob " + ApiKeys.hash(BOB) + " models=llama3:8b\n"));
    private EmbeddedRelay relay;

    @TempDir
    Path dir;

    @AfterEach
    void tearDown() {
        relay.close();
    }

    /** Sends {@code request} and returns what the client got so far: {@code [status]} and body text. */
    private String answer(FullHttpRequest request) {
        relay.client.writeInbound(request);
        return relay.clientText();
    }


    /** The node n1 answers its pending request with 200 and {@code {}}. */
    private void nodeAnswers() {
        relay.upstream("n1").writeInbound(ok());
        assertThat(relay.clientText()).isEqualTo("[200]{}");
    }

    private static FullHttpRequest chat(String header, String value, String body) {
        FullHttpRequest r = post("/v1/chat/completions", body);
        if (header != null) {
            r.headers().set(header, value);
        }
        return r;
    }

    private static void assertError(String answer, int status, String type) {
        assertThat(answer).startsWith("[" + status + "]").contains("\"type\":\"" + type + "\"");
    }

    @Test
    void noKeyOrAWrongOneIs401AndNoNodeIsAsked() {
        relay = new EmbeddedRelay(List.of(), new Stages.Access(keys::get, null, false), "n1");
        assertError(answer(chat(null, null, CHAT)), 401, "invalid_api_key");
        assertError(answer(chat("authorization", "Bearer hg-wrong", CHAT)), 401, "invalid_api_key");
        assertError(answer(chat("authorization", "Basic " + ALICE, CHAT)), 401, "invalid_api_key");
        assertError(answer(chat("x-api-key", "", CHAT)), 401, "invalid_api_key");
        assertThat(relay.connections("n1")).isZero();
        assertThat(relay.counters.errors(ErrorType.INVALID_API_KEY)).isEqualTo(4);
        assertThat(relay.client.isActive()).isTrue();
    }

    @Test
    void aBearerOrAnXApiKeyGoesThroughAndTheNodeSeesNeither() {
        relay = new EmbeddedRelay(List.of(), new Stages.Access(keys::get, null, false), "n1");
        relay.client.writeInbound(chat("authorization", "bearer " + ALICE, CHAT));
        FullHttpRequest sent = relay.upstream("n1").readOutbound();
        assertThat(sent.headers().contains(HttpHeaderNames.AUTHORIZATION)).isFalse();
        sent.release();
        nodeAnswers();

        FullHttpRequest viaXApiKey = chat("x-api-key", ALICE, CHAT);
        viaXApiKey.headers().set("authorization", "Token something-else");
        relay.client.writeInbound(viaXApiKey);
        sent = relay.upstream("n1").readOutbound();
        assertThat(sent.headers().contains("x-api-key")).isFalse();
        assertThat(sent.headers().contains(HttpHeaderNames.AUTHORIZATION)).isFalse();
        sent.release();
        nodeAnswers();

        assertThat(relay.registry.get("heartgate_proxy_key_requests").tags("key", "alice", "status_class", "2xx")
                .counter().count()).isEqualTo(2);
    }

    @Test
    void aKeyLimitedToAModelIs403ForAnotherAndForABodyWithoutOne() {
        relay = new EmbeddedRelay(List.of(), new Stages.Access(keys::get, null, false), "n1");
        assertError(answer(chat("authorization", "Bearer " + BOB, "{\"model\":\"mistral:7b\"}")), 403,
                "model_not_allowed");
        assertError(answer(chat("authorization", "Bearer " + BOB, "{\"messages\":[]}")), 403, "model_not_allowed");
        assertThat(relay.connections("n1")).isZero();
        assertThat(relay.registry.get("heartgate_proxy_key_requests").tags("key", "bob", "status_class", "4xx")
                .counter().count()).isEqualTo(2);

        // Its own model, and a call without a body or model, go through.
        relay.client.writeInbound(chat("authorization", "Bearer " + BOB, "{\"model\":\"llama3:8b\"}"));
        assertThat(relay.connections("n1")).isEqualTo(1);
        ReferenceCountUtil.release(relay.upstream("n1").readOutbound());
        nodeAnswers();
        FullHttpRequest tags = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/api/version",
                Unpooled.EMPTY_BUFFER);
        tags.headers().set(HttpHeaderNames.HOST, "front.example").set("authorization", "Bearer " + BOB);
        relay.client.writeInbound(tags);
        FullHttpRequest listing = relay.upstream("n1").readOutbound();
        assertThat(listing.uri()).isEqualTo("/api/version");
        listing.release();
    }

    @Test
    void aForbiddenAnswerToALimitedKeyCarriesItsRateLimitHeadersAndTakesNoToken() {
        String carol = "hg-carol-key";
        keys.set(ApiKeys.parse("carol " + ApiKeys.hash(carol) + " models=llama3:8b rpm=5 tpm=1000\n"));
        relay = new EmbeddedRelay(List.of(), new Stages.Access(keys::get, null, false), "n1");
        for (int i = 0; i < 2; i++) {
            relay.client.writeInbound(chat("authorization", "Bearer " + carol, "{\"model\":\"mistral:7b\"}"));
            HttpResponse head = relay.client.readOutbound();
            assertThat(head.status().code()).isEqualTo(403);
            assertThat(head.headers().get("x-ratelimit-limit-requests")).isEqualTo("5");
            assertThat(head.headers().get("x-ratelimit-remaining-requests")).as("nothing taken").isEqualTo("5");
            assertThat(head.headers().get("x-ratelimit-limit-tokens")).isEqualTo("1000");
            ReferenceCountUtil.release(head);
            Object rest;
            while ((rest = relay.client.readOutbound()) != null) {
                ReferenceCountUtil.release(rest);
            }
        }
    }

    @Test
    void aLimitedKeyCannotSlipAnotherModelPastTheCheckInASecondField() {
        relay = new EmbeddedRelay(List.of(), new Stages.Access(keys::get, null, false), "n1");
        // vLLM keeps the last duplicate key, Ollama also matches MODEL: the first is not the one that runs.
        assertError(answer(chat("authorization", "Bearer " + BOB,
                "{\"model\":\"llama3:8b\",\"MODEL\":\"secret:70b\",\"messages\":[]}")), 403, "model_not_allowed");
        assertError(answer(chat("authorization", "Bearer " + BOB,
                "{\"model\":\"llama3:8b\",\"messages\":[],\"model\":\"secret:70b\"}")), 403, "model_not_allowed");
        // Ollama's management calls name the model in name too, and a query string changes nothing.
        FullHttpRequest show = post("/api/show?verbose=true", "{\"model\":\"llama3:8b\",\"name\":\"secret:70b\"}");
        show.headers().set("authorization", "Bearer " + BOB);
        assertError(answer(show), 403, "model_not_allowed");
        assertThat(relay.connections("n1")).isZero();
        // An unlimited key is not checked: it routes on the first model field, as a request without keys does.
        relay.client.writeInbound(chat("authorization", "Bearer " + ALICE,
                "{\"model\":\"llama3:8b\",\"MODEL\":\"x\"}"));
        assertThat(relay.connections("n1")).isEqualTo(1);
        ReferenceCountUtil.release(relay.upstream("n1").readOutbound());
    }

    @Test
    void aChangedKeySetAppliesFromTheNextRequest() {
        relay = new EmbeddedRelay(List.of(), new Stages.Access(keys::get, null, false), "n1");
        relay.client.writeInbound(chat("authorization", "Bearer " + ALICE, CHAT));
        ReferenceCountUtil.release(relay.upstream("n1").readOutbound());
        keys.set(ApiKeys.parse("bob " + ApiKeys.hash(BOB)));
        // The request already past the stage is answered.
        nodeAnswers();
        assertError(answer(chat("authorization", "Bearer " + ALICE, CHAT)), 401, "invalid_api_key");
    }

    @Test
    void theNodesKeyReplacesWhateverTheClientSent() throws Exception {
        Files.writeString(dir.resolve("upstream"), "vllm-secret\n");
        UpstreamKey upstream = UpstreamKey.load(dir.resolve("upstream"));
        relay = new EmbeddedRelay(List.of(), new Stages.Access(keys::get, upstream, false), "n1");
        relay.client.writeInbound(chat("x-api-key", ALICE, CHAT));
        FullHttpRequest sent = relay.upstream("n1").readOutbound();
        assertThat(sent.headers().get(HttpHeaderNames.AUTHORIZATION)).isEqualTo("Bearer vllm-secret");
        assertThat(sent.headers().contains("x-api-key")).isFalse();
        sent.release();
        assertThat(upstream.toString()).doesNotContain("vllm-secret");
    }

    @Test
    void withoutKeysTheClientsOwnCredentialReachesTheNode() {
        relay = new EmbeddedRelay(List.of(), Stages.Access.OPEN, "n1");
        relay.client.writeInbound(chat("authorization", "Bearer node-key", CHAT));
        FullHttpRequest sent = relay.upstream("n1").readOutbound();
        assertThat(sent.headers().get(HttpHeaderNames.AUTHORIZATION)).isEqualTo("Bearer node-key");
        sent.release();
    }

    private static Object[] ok() {
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 2);
        return new Object[] {head, new DefaultLastHttpContent(Unpooled.copiedBuffer("{}", StandardCharsets.UTF_8))};
    }
}
