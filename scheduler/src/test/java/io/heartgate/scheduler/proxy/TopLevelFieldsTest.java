package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The whole-top-level reads behind the second-model check and the stall rule, and their agreement with the fast reader. */
class TopLevelFieldsTest {

    private static final String LONG_NAME = "a".repeat(60_000); // past Jackson's default limit of 50,000

    @Test
    void aFieldNameLongerThanJacksonsDefaultLimitHidesNoSecondModel() {
        String body = "{\"" + LONG_NAME + "\":0,\"model\":\"allowed\",\"model\":\"forbidden\"}";
        assertThat(TopLevelFields.namesModelTwice(buf(body), "/v1/chat/completions")).isTrue();
        RequestFactsReader fast = new RequestFactsReader(Set.of());
        RequestFactsReader jackson = new RequestFactsReader(Set.of(), null, false);
        assertThat(fast.read(buf(body), "/v1/chat/completions"))
                .isEqualTo(jackson.read(buf(body), "/v1/chat/completions"));
        assertThat(fast.read(buf(body), "/v1/chat/completions").model()).isEqualTo("allowed:latest");
    }

    @Test
    void aBodyJacksonCannotReadToItsEndCountsAsNamingTwoModels() {
        // Python's json reads NaN, so a vLLM behind would go on to the second model.
        assertThat(TopLevelFields.namesModelTwice(buf("{\"model\":\"allowed\",\"t\":NaN,\"model\":\"other\"}"),
                "/v1/chat/completions")).isTrue();
        assertThat(TopLevelFields.namesModelTwice(buf("{\"model\":\"allowed\",\"t\":1}"), "/v1/chat/completions"))
                .isFalse();
        assertThat(TopLevelFields.namesModelTwice(buf("not json"), "/v1/chat/completions")).isFalse();
    }

    @Test
    void aModelManagementCallIsNoStreamForTheStallRule() {
        // Ollama's pull streams its progress by default, but a stalled node is judged on generations only.
        assertThat(TopLevelFields.streams(buf("{\"model\":\"llama3:8b\"}"), "/api/pull")).isFalse();
        assertThat(TopLevelFields.streams(buf("{\"model\":\"llama3:8b\"}"), "/api/chat")).isTrue();
    }

    @Test
    void aBodySizedModelNameIsNormalisedEveryTime() {
        RequestFactsReader fast = new RequestFactsReader(Set.of());
        String name = "m".repeat(1000);
        for (int i = 0; i < 3; i++) {
            assertThat(fast.read(buf("{\"model\":\"" + name + "\"}"), "/v1/chat/completions").model())
                    .isEqualTo(name + ":latest");
        }
    }

    private static ByteBuf buf(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }
}
