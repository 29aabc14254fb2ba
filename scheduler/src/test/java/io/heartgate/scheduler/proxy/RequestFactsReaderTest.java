package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.request.RequestFacts;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RequestFactsReaderTest {

    private static final RequestFactsReader ALL = new RequestFactsReader(EnumSet.allOf(RequestFacts.Field.class));
    private static final RequestFactsReader MODEL_ONLY = new RequestFactsReader(Set.of());

    /** Reads with every fact wanted; the body's size, which every read gives, is checked once ({@link #theBodysSizeIsRead}). */
    private static RequestFacts read(String uri, String body) {
        return ALL.read(Unpooled.copiedBuffer(body, StandardCharsets.UTF_8), uri).withPromptBytes(0);
    }

    @Test
    void readsTheTopLevelModelNormalisedAndTheStreamFlag() {
        assertThat(read("/v1/chat/completions", "{\"model\":\"llama3\",\"messages\":[{\"role\":\"user\",\"model\":\"x\"}],"
                + "\"stream\":true}")).isEqualTo(new RequestFacts("llama3:latest", true, null, null));
        assertThat(read("/api/generate", "  {\"stream\": false, \"prompt\": {\"model\": \"nested\"}, \"model\": \"qwen2.5:7b\"}"))
                .isEqualTo(new RequestFacts("qwen2.5:7b", false, null, null));
        assertThat(read("/api/generate", "{\"model\":\"m:1\"}")).isEqualTo(RequestFacts.ofModel("m:1"));
    }

    @Test
    void aStreamFlagIsReadAsTheServersPydanticReadsIt() {
        assertThat(read("/v1/completions", "{\"model\":\"m\",\"stream\":1}").stream()).isTrue();
        assertThat(read("/v1/completions", "{\"model\":\"m\",\"stream\":\"YES\"}").stream()).isTrue();
        assertThat(read("/v1/completions", "{\"model\":\"m\",\"stream\":\"off\"}").stream()).isFalse();
        assertThat(read("/v1/completions", "{\"model\":\"m\",\"stream\":0.0}").stream()).isFalse();
        assertThat(read("/v1/completions", "{\"model\":\"m\",\"stream\":2}").stream()).isNull();
        assertThat(read("/v1/completions", "{\"model\":\"m\",\"stream\":\"true \"}").stream()).isNull();
    }

    @Test
    void ollamasOlderNameFieldNamesTheModelOnlyOnItsManagementCalls() {
        for (String uri : new String[] {"/api/show", "/api/pull", "/api/delete", "/api/show?verbose=true"}) {
            assertThat(read(uri, "{\"name\":\"llama3\"}").model()).as(uri).isEqualTo("llama3:latest");
        }
        assertThat(read("/api/show", "{\"name\":\"a\",\"model\":\"b\"}").model()).isEqualTo("b:latest");
        assertThat(read("/api/chat", "{\"name\":\"llama3\"}")).isEqualTo(RequestFacts.NONE);
    }

    @Test
    void aBodyThatIsNotAJsonObjectSaysNothing() {
        assertThat(read("/x", "")).isEqualTo(RequestFacts.NONE);
        assertThat(read("/x", "[{\"model\":\"m\"}]")).isEqualTo(RequestFacts.NONE);
        assertThat(read("/x", "model=m")).isEqualTo(RequestFacts.NONE);
        assertThat(read("/x", "{\"model\": 3, \"stream\": \"maybe\"}")).isEqualTo(RequestFacts.NONE);
    }

    @Test
    void nestedValuesAreSkippedWhateverTheirName() {
        assertThat(read("/api/show", "{\"name\":{\"model\":\"a\"},\"model\":\"b\"}").model()).isEqualTo("b:latest");
        assertThat(read("/x", "{\"stream\":{\"x\":1},\"model\":\"b\"}"))
                .isEqualTo(RequestFacts.ofModel("b:latest"));
        assertThat(read("/x", "{\"model\":{\"id\":\"a\"},\"x\":{\"model\":\"c\"}}")).isEqualTo(RequestFacts.NONE);
    }

    @Test
    void withoutAStageWantingMoreThePassStopsAtTheModel() {
        String longTail = "{\"model\":\"m\",\"messages\":[{\"content\":\"" + "x".repeat(1000) + "\"}],\"stream\":true}";
        String brokenTail = "{\"model\":\"m\",\"messages\":[{\"content\":";

        assertThat(MODEL_ONLY.read(Unpooled.copiedBuffer(longTail, StandardCharsets.UTF_8), "/x").withPromptBytes(0))
                .isEqualTo(RequestFacts.ofModel("m:latest"));
        assertThat(ALL.read(Unpooled.copiedBuffer(longTail, StandardCharsets.UTF_8), "/x").withPromptBytes(0))
                .isEqualTo(new RequestFacts("m:latest", true, null, null));
        // The tail is not even looked at: broken JSON after the model costs nothing and changes nothing.
        assertThat(MODEL_ONLY.read(Unpooled.copiedBuffer(brokenTail, StandardCharsets.UTF_8), "/x").withPromptBytes(0))
                .isEqualTo(RequestFacts.ofModel("m:latest"));
    }

    @Test
    void fieldsAfterADeeplyNestedOneAreReadAsDeepAsAnyServerParses() {
        String deep = "[".repeat(9_000) + "]".repeat(9_000); // Go's encoding/json takes up to 10,000 levels
        assertThat(read("/v1/chat/completions", "{\"model\":\"m\",\"chat_template_kwargs\":{\"a\":" + deep
                + "},\"stream\":true}")).isEqualTo(new RequestFacts("m:latest", true, null, null));
        String tooDeep = "[".repeat(10_001) + "]".repeat(10_001);
        assertThat(read("/v1/chat/completions", "{\"model\":\"m\",\"x\":" + tooDeep + ",\"stream\":true}"))
                .as("deeper than any server takes: the node refuses it").isEqualTo(RequestFacts.ofModel("m:latest"));
    }

    @Test
    void brokenJsonAfterTheFieldsKeepsWhatWasRead() {
        assertThat(read("/x", "{\"model\":\"m\",\"messages\":[{\"role\":")).isEqualTo(RequestFacts.ofModel("m:latest"));
        assertThat(read("/x", "{\"messages\":[{\"role\":")).isEqualTo(RequestFacts.NONE);
    }

    @Test
    void theBodysSizeIsRead() {
        String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
        ByteBuf buf = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        assertThat(ALL.read(buf, "/v1/chat/completions").promptBytes()).isEqualTo(body.length());
        assertThat(MODEL_ONLY.read(buf, "/v1/chat/completions").promptBytes()).as("the fast path too").isEqualTo(body.length());
    }

    @Test
    void readingLeavesTheBufferAsItWasAndWorksOnDirectBuffers() {
        ByteBuf direct = Unpooled.directBuffer();
        direct.writeCharSequence("{\"model\":\"m\",\"stream\":true}", StandardCharsets.UTF_8);
        int readable = direct.readableBytes();

        assertThat(ALL.read(direct, "/x")).isEqualTo(new RequestFacts("m:latest", true, null, null, readable));
        assertThat(direct.readerIndex()).isZero();
        assertThat(direct.readableBytes()).isEqualTo(readable);
        direct.release();
    }

    @Test
    void namesModelTwiceReadsTheWholeTopLevelOfAnyBufferAndLeavesItAsItWas() {
        CompositeByteBuf body = Unpooled.compositeBuffer();
        body.addComponent(true, Unpooled.copiedBuffer("{\"model\":\"llama3:8b\",\"messages\":[{\"model\":\"x\"}],",
                StandardCharsets.UTF_8));
        body.addComponent(true, Unpooled.copiedBuffer("\"Model\":\"secret:70b\"}", StandardCharsets.UTF_8));
        int reader = body.readerIndex();
        int writer = body.writerIndex();

        assertThat(TopLevelFields.namesModelTwice(body, "/v1/chat/completions")).isTrue();
        assertThat(body.readerIndex()).isEqualTo(reader);
        assertThat(body.writerIndex()).isEqualTo(writer);
        assertThat(TopLevelFields.namesModelTwice(Unpooled.copiedBuffer(
                "{\"model\":\"llama3:8b\",\"messages\":[{\"model\":\"x\"}]}", StandardCharsets.UTF_8),
                "/v1/chat/completions")).as("a nested model is not a second one").isFalse();
        assertThat(TopLevelFields.namesModelTwice(Unpooled.copiedBuffer(
                "{\"name\":\"a\",\"model\":\"b\"}", StandardCharsets.UTF_8), "/api/pull")).isTrue();
        assertThat(TopLevelFields.namesModelTwice(Unpooled.copiedBuffer(
                "{\"name\":\"a\",\"model\":\"b\"}", StandardCharsets.UTF_8), "/api/chat")).isFalse();
        body.release();
    }
}
