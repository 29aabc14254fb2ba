package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.protocol.NodeState;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The catalogue calls answered by the scheduler from the table, never forwarded: the union of the
 * routable nodes' models, one entry per normalised name, the same on every call; Ollama's
 * descriptions and loaded models as the nodes reported them.
 */
class CatalogueTest {

    private static final ModelInfo LLAMA = new ModelInfo("llama3:8b", 4661224676L, "365c0bd3c000a25d28ddbf732fe1c6ad",
            "2026-11-01T12:00:00Z", new ModelInfo.Details("", "gguf", "llama", List.of("llama"), "8.0B", "Q4_0"));

    private EmbeddedRelay relay;

    @BeforeEach
    void setUp() {
        relay = new EmbeddedRelay("n1", "n2", "n3");
        relay.nodeBeats("n1", b -> b.models(List.of("llama3:8b", "mistral:7b")).modelInfo(List.of(LLAMA))
                .loaded(List.of(new LoadedModel("llama3:8b", 5_000_000_000L, 4_900_000_000L, "2026-12-01T15:00:00Z", 4096))));
        relay.nodeBeats("n2", b -> b.models(List.of("llama3:8b", "qwen2.5:7b")));
        relay.nodeBeats("n3", b -> b.models(List.of("llama3:latest", "gemma3")).state(NodeState.DOWN)); // not routable
    }

    @AfterEach
    void tearDown() {
        relay.close();
    }

    /** GETs {@code uri}; returns "STATUS BODY", and fails if a node saw it. */
    private String get(String uri) {
        EmbeddedChannel c = relay.newClient();
        FullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, uri, Unpooled.EMPTY_BUFFER);
        r.headers().set("host", "front.example");
        c.writeInbound(r);
        assertThat(relay.connections("n1") + relay.connections("n2") + relay.connections("n3")).as("forwarded").isZero();
        StringBuilder sb = new StringBuilder();
        Object o;
        while ((o = c.readOutbound()) != null) {
            if (o instanceof HttpResponse resp) {
                sb.append(resp.status().code()).append(' ');
            }
            if (o instanceof HttpContent content) {
                sb.append(content.content().toString(StandardCharsets.UTF_8));
            }
            ReferenceCountUtil.release(o);
        }
        return sb.toString();
    }

    private static JsonObject body(String answer) {
        assertThat(answer).startsWith("200 ");
        return new JsonObject(answer.substring(4));
    }

    @Test
    void openAiModelsIsTheUnionOfTheRoutableNodesOnEveryCall() {
        String first = get("/v1/models");
        JsonObject list = body(first);
        assertThat(list.getString("object")).isEqualTo("list");
        assertThat(list.getJsonArray("data").stream().map(o -> ((JsonObject) o).getString("id")).toList())
                .containsExactly("llama3:8b", "mistral:7b", "qwen2.5:7b"); // n3 is DOWN: its gemma3 is not listed
        assertThat(list.getJsonArray("data").getJsonObject(0).getString("owned_by")).isEqualTo("heartgate");
        for (int i = 0; i < 5; i++) {
            assertThat(get("/v1/models")).isEqualTo(first);
        }
        assertThat(body(get("/v1/models/qwen2.5:7b")).getString("id")).isEqualTo("qwen2.5:7b");
        assertThat(body(get("/v1/models/llama3%3A8b")).getString("id")).isEqualTo("llama3:8b");
        assertThat(get("/v1/models/gemma3")).startsWith("404 ").contains("model_not_found");
    }

    @Test
    void ollamaTagsCarriesWhatTheNodesSaidOfEachModel() {
        JsonObject tags = body(get("/api/tags"));
        assertThat(tags.getJsonArray("models")).hasSize(3);
        JsonObject llama = tags.getJsonArray("models").getJsonObject(0);
        assertThat(llama.getString("name")).isEqualTo("llama3:8b");
        assertThat(llama.getLong("size")).isEqualTo(4661224676L);
        assertThat(llama.getString("digest")).isEqualTo(LLAMA.digest());
        assertThat(llama.getString("modified_at")).isEqualTo("2026-11-01T12:00:00Z");
        assertThat(llama.getJsonObject("details").getString("quantization_level")).isEqualTo("Q4_0");
        assertThat(tags.getJsonArray("models").getJsonObject(1).getString("name")).isEqualTo("mistral:7b");
    }

    @Test
    void ollamaPsListsWhatIsLoadedAnywhere() {
        JsonObject ps = body(get("/api/ps"));
        assertThat(ps.getJsonArray("models")).singleElement().satisfies(o -> {
            JsonObject m = (JsonObject) o;
            assertThat(m.getString("name")).isEqualTo("llama3:8b");
            assertThat(m.getLong("size_vram")).isEqualTo(4_900_000_000L);
            assertThat(m.getInteger("context_length")).isEqualTo(4096);
            assertThat(m.getString("digest")).isEqualTo(LLAMA.digest());
        });
    }

    @Test
    void withNoRoutableNodeTheAnswerIsNoUpstream() {
        relay.nodeBecomes("n1", NodeState.DOWN);
        relay.nodeBecomes("n2", null);
        assertThat(get("/v1/models")).startsWith("503 ").contains("no_upstream");
        assertThat(get("/api/tags")).startsWith("503 ");
    }

    @Test
    void otherGetsStillGoToANode() {
        EmbeddedChannel c = relay.newClient();
        FullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/api/version",
                Unpooled.EMPTY_BUFFER);
        r.headers().set("host", "front.example");
        c.writeInbound(r);
        assertThat(relay.connections("n1") + relay.connections("n2")).isEqualTo(1);
    }
}
