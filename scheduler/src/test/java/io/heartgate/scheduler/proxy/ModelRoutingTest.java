package io.heartgate.scheduler.proxy;

import static io.heartgate.scheduler.proxy.EmbeddedRelay.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.request.ErrorType;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every endpoint that names a model goes to a node serving it (n2 serves qwen2.5:7b, n1 and n3
 * only llama3:8b), or gets 404 {@code model_not_found}; Ollama's model-management calls get 405
 * {@code management_disabled} unless allowed, and then go to the one node {@code X-Heartgate-Node}
 * names, never retried on another.
 */
class ModelRoutingTest {

    private EmbeddedRelay relay;

    @AfterEach
    void tearDown() {
        relay.close();
    }

    private void fleet(boolean management) {
        relay = new EmbeddedRelay(new Stages.Access(null, null, false, management), "n1", "n2", "n3");
        relay.nodeServes("n2", "qwen2.5:7b");
    }

    /** Sends {@code request} on a new connection; returns the node it reached, or the client's answer. */
    private String send(FullHttpRequest request) {
        EmbeddedChannel c = relay.newClient();
        c.writeInbound(request);
        for (String id : List.of("n1", "n2", "n3")) {
            if (relay.connections(id) > 0) {
                FullHttpRequest seen = relay.upstream(id).readOutbound();
                if (seen != null) {
                    assertThat(seen.headers().contains("x-heartgate-node")).as("never forwarded").isFalse();
                    seen.release();
                    return id;
                }
            }
        }
        StringBuilder sb = new StringBuilder();
        Object o;
        while ((o = c.readOutbound()) != null) {
            if (o instanceof HttpResponse r) {
                sb.append(r.status().code()).append(' ');
            }
            if (o instanceof HttpContent content) {
                sb.append(content.content().toString(StandardCharsets.UTF_8));
            }
            ReferenceCountUtil.release(o);
        }
        return sb.toString();
    }

    @ParameterizedTest
    @ValueSource(strings = {"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses",
            "/v1/audio/speech", "/v1/messages", "/rerank", "/v1/rerank", "/api/generate", "/api/chat", "/api/embed",
            "/api/embeddings", "/api/show"})
    void everyEndpointThatNamesAModelGoesToANodeServingIt(String path) {
        fleet(false);
        for (int i = 0; i < 3; i++) { // round robin would spread them over all three
            assertThat(send(post(path, "{\"model\":\"qwen2.5:7b\",\"input\":\"hi\"}"))).isEqualTo("n2");
        }
        assertThat(send(post(path, "{\"model\":\"mistral:7b\"}"))).startsWith("404 ").contains("model_not_found");
    }

    @Test
    void ollamaShowMayNameItsModelInName() {
        fleet(false);
        assertThat(send(post("/api/show", "{\"name\":\"qwen2.5:7b\"}"))).isEqualTo("n2");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/api/pull", "/api/delete", "/api/create", "/api/copy", "/api/push"})
    void managementCallsAreRefusedByDefault(String path) {
        fleet(false);
        FullHttpRequest r = post(path, "{\"model\":\"llama3:8b\"}");
        r.headers().set("x-heartgate-node", "n1");
        assertThat(send(r)).startsWith("405 ").contains("\"type\":\"management_disabled\"")
                .contains("run it on the node itself");
        assertThat(relay.counters.errors(ErrorType.MANAGEMENT_DISABLED)).isEqualTo(1);
    }

    @Test
    void allowedAManagementCallGoesToTheNamedNodeOnly() {
        fleet(true);
        FullHttpRequest pull = post("/api/pull", "{\"model\":\"qwen2.5:7b\"}");
        pull.headers().set("X-Heartgate-Node", "n3"); // n3 does not serve it yet: that is the point of a pull
        assertThat(send(pull)).isEqualTo("n3");

        assertThat(send(post("/api/delete", "{\"model\":\"llama3:8b\"}"))).startsWith("400 ")
                .contains("X-Heartgate-Node");
        FullHttpRequest unknown = post("/api/copy", "{\"source\":\"a\",\"destination\":\"b\"}");
        unknown.headers().set("X-Heartgate-Node", "n9");
        assertThat(send(unknown)).startsWith("404 ").contains("node_not_found");
    }

    @Test
    void aManagementCallHoldsNoGenerationSlot() {
        // A pull can take minutes on a node's disk and network; counted in flight, it would keep a
        // node of capacity 1 from generating anything until it ended.
        fleet(true);
        relay.nodeBeats("n3", b -> b.capacity(1));
        FullHttpRequest pull = post("/api/pull", "{\"model\":\"qwen2.5:7b\"}");
        pull.headers().set("X-Heartgate-Node", "n3");
        assertThat(send(pull)).isEqualTo("n3");
        assertThat(relay.nodes.stream().filter(n -> n.id().equals("n3")).findFirst().orElseThrow().inFlight().get())
                .isZero();
    }

    @Test
    void aPinnedCallWhoseNodeRefusesIsAnswered502NotSentElsewhere() {
        fleet(true);
        relay.accept.put("n1", EmbeddedRelay.Accept.REFUSE);
        FullHttpRequest pull = post("/api/pull", "{\"model\":\"qwen2.5:7b\"}");
        pull.headers().set("X-Heartgate-Node", "n1");
        assertThat(send(pull)).startsWith("502 ").contains("a management call goes to its node only");
        assertThat(relay.connections("n2") + relay.connections("n3")).isZero();
    }
}
