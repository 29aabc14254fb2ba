package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.affinity.AffinityKeys;
import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.request.RequestFacts;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The affinity key, read in the same pass over the body as the model. */
class AffinityKeyReadingTest {

    private static final RequestFactsReader DEFAULT = new RequestFactsReader(Set.of(), AffinityKeys.DEFAULTS);

    private static RequestFacts read(RequestFactsReader r, String uri, String body, Map<String, String> headers) {
        return r.read(Unpooled.copiedBuffer(body, StandardCharsets.UTF_8), uri, name -> {
            for (Map.Entry<String, String> e : headers.entrySet()) {
                if (e.getKey().equalsIgnoreCase(name)) {
                    return e.getValue();
                }
            }
            return null;
        });
    }

    private static Long key(String body) {
        return read(DEFAULT, "/v1/chat/completions", body, Map.of()).affinity();
    }

    /** The body of turn {@code turns} of an OpenAI chat: the system prompt, then user and assistant in turn. */
    private static String chat(String system, String opening, int turns) {
        List<String> messages = new ArrayList<>();
        messages.add("{\"role\":\"system\",\"content\":\"" + system + "\"}");
        for (int t = 1; t <= turns; t++) {
            messages.add("{\"role\":\"user\",\"content\":\"" + (t == 1 ? opening : "and then what about part " + t) + "\"}");
            if (t < turns) {
                messages.add("{\"role\":\"assistant\",\"content\":\"Here is answer " + t + ", at some length.\"}");
            }
        }
        return "{\"model\":\"llama3\",\"messages\":[" + String.join(",", messages) + "],\"stream\":true}";
    }

    @Test
    void everyTurnOfOneConversationHasOneKeyAndSystemPromptsDiffer() {
        Set<Long> turns = new HashSet<>();
        for (int t = 1; t <= 6; t++) {
            turns.add(key(chat("You are a helpful assistant.", "Tell me about GPUs", t)));
        }
        assertThat(turns).hasSize(1).doesNotContainNull();
        Long other = key(chat("You are a terse SQL expert.", "Tell me about GPUs", 1));
        assertThat(other).isNotNull().isNotIn(turns);
        assertThat(key(chat("You are a helpful assistant.", "Plan my trip", 1))).as("another conversation").isNotIn(turns);
    }

    @Test
    void aSystemPromptLongerThanThePrefixGivesItsCallersOneKey() {
        String manual = "Follow the house rules. ".repeat(100); // 2,400 characters, more than the 2,048 hashed
        assertThat(key(chat(manual, "first caller's question", 1))).isEqualTo(key(chat(manual, "another question", 3)));
    }

    @Test
    void ollamaChatAndContentPartsAndFieldOrderGiveTheSameRendering() {
        String parts = "{\"messages\":[{\"content\":[{\"type\":\"text\",\"text\":\"Be brief.\"}],\"role\":\"system\"},"
                + "{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:x\"}},"
                + "{\"type\":\"text\",\"text\":\"Hi\"}]}],\"model\":\"m\"}";
        String plain = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                + "{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Hello\"}]}";
        RequestFacts f = read(DEFAULT, "/api/chat", parts, Map.of());
        assertThat(f.affinity()).isNotNull().isEqualTo(read(DEFAULT, "/api/chat", plain, Map.of()).affinity());
        assertThat(f.model()).isEqualTo("m:latest");
    }

    @Test
    void generateHashesTheSystemThenThePromptWhateverTheirOrder() {
        Long a = read(DEFAULT, "/api/generate", "{\"model\":\"m\",\"system\":\"S\",\"prompt\":\"P\"}", Map.of()).affinity();
        Long b = read(DEFAULT, "/api/generate", "{\"prompt\":\"P\",\"model\":\"m\",\"system\":\"S\"}", Map.of()).affinity();
        assertThat(a).isNotNull().isEqualTo(b);
        assertThat(read(DEFAULT, "/v1/completions", "{\"model\":\"m\",\"prompt\":[\"P\",\"Q\"],\"system\":\"S\"}", Map.of())
                .affinity()).isEqualTo(a);
        assertThat(read(DEFAULT, "/api/generate", "{\"model\":\"m\",\"system\":\"T\",\"prompt\":\"P\"}", Map.of()).affinity())
                .isNotEqualTo(a);
    }

    @Test
    void sourcesAreTriedInOrder() {
        String body = "{\"model\":\"m\",\"user\":\"u-17\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
                + "\"prompt_cache_key\":\"conv-9\"}";
        assertThat(read(DEFAULT, "/v1/chat/completions", body, Map.of("x-session-id", " s-1 ")).affinity())
                .as("the header, trimmed").isEqualTo(KeyHash.of("s-1"));
        assertThat(read(DEFAULT, "/v1/chat/completions", body, Map.of()).affinity())
                .as("prompt_cache_key before user, wherever it is").isEqualTo(KeyHash.of("conv-9"));
        assertThat(read(DEFAULT, "/v1/chat/completions", body.replace(",\"prompt_cache_key\":\"conv-9\"", ""), Map.of())
                .affinity()).isEqualTo(KeyHash.of("u-17"));
        RequestFactsReader prefixFirst = new RequestFactsReader(Set.of(), AffinityKeys.parse("prefix,header:X-Session-Id", 64));
        assertThat(read(prefixFirst, "/v1/chat/completions", body, Map.of("X-Session-Id", "s-1")).affinity())
                .isEqualTo(key("{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"));
    }

    @Test
    void noSourceGivesNoKeyAndNoReaderReadsNone() {
        assertThat(key("{\"model\":\"m\"}")).isNull();
        assertThat(key("{\"model\":\"m\",\"messages\":[]}")).isNull();
        assertThat(read(DEFAULT, "/v1/chat/completions", "not json", Map.of("X-Session-Id", "s")).affinity())
                .isEqualTo(KeyHash.of("s"));
        RequestFactsReader plain = new RequestFactsReader(Set.of());
        assertThat(read(plain, "/v1/chat/completions", chat("S", "Q", 2), Map.of("X-Session-Id", "s")).affinity()).isNull();
    }

    @Test
    void onlyThePrefixLengthCounts() {
        RequestFactsReader short8 = new RequestFactsReader(Set.of(), AffinityKeys.parse("prefix", 8));
        Long a = read(short8, "/v1/chat/completions", chat("12345678-and-more", "Q1", 1), Map.of()).affinity();
        Long b = read(short8, "/v1/chat/completions", chat("12345678-different", "Q2", 1), Map.of()).affinity();
        assertThat(a).isEqualTo(b);
    }

    @Test
    void brokenJsonAfterThePromptStillRoutesOnWhatWasRead() {
        RequestFacts f = read(DEFAULT, "/v1/chat/completions",
                "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"temperature\":", Map.of());
        assertThat(f.model()).isEqualTo("m:latest");
        assertThat(f.affinity()).isEqualTo(key("{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"));
    }

    @Test
    void badSourceListsAreRefusedNamingTheEntry() {
        assertThatThrownBy(() -> AffinityKeys.parse("cookie:sid", 2048)).isInstanceOf(InvalidSettingException.class)
                .hasMessageContaining("'cookie:sid' is not a key source");
        assertThatThrownBy(() -> AffinityKeys.parse("header:", 2048)).hasMessageContaining("'header:'");
        assertThatThrownBy(() -> AffinityKeys.parse("prefix,prefix", 2048)).hasMessageContaining("listed twice");
        assertThatThrownBy(() -> AffinityKeys.parse("prefix", 0)).hasMessageContaining("1 to");
        assertThat(AffinityKeys.parse(" header:X-A , body:user ,prefix", 10).sources()).containsExactly(
                new AffinityKeys.Source.Header("X-A"), new AffinityKeys.Source.Body("user"), new AffinityKeys.Source.Prefix());
    }
}
