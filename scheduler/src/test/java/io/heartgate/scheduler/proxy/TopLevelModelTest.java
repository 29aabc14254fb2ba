package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.request.RequestFacts;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The hand-written model reader gives Jackson's answer or declines: exact cases, then a
 * differential run over seeded mutations of real request shapes against the Jackson pass.
 */
class TopLevelModelTest {

    private static final List<String> BODIES = List.of(
            "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}",
            "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\\nReally.\"},{\"role\":\"user\","
                    + "\"content\":[{\"type\":\"text\",\"text\":\"caf\u00e9 \u2603 \ud83d\ude00\"}]}],\"model\":\"gpt-4o\","
                    + "\"temperature\":0.7,\"max_tokens\":128,\"stream\":true,\"stop\":null,\"n\":1,\"top_p\":1e-3}",
            "{ \"model\" : \"qwen2.5:7b\" , \"prompt\" : \"Why is the sky blue?\", \"raw\": false, \"options\": "
                    + "{\"num_ctx\": 4096, \"seed\": -42}}",
            "{\"input\":[\"a\",\"b\"],\"encoding_format\":\"float\",\"model\":\"nomic-embed-text\"}",
            "{\"name\":\"llama3:8b\",\"verbose\":true}",
            "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\","
                    + "\"properties\":{\"x\":{\"type\":\"number\"}}}}}],\"model\":\"mistral\",\"model\":\"other\"}",
            "{}",
            "{\"prompt\":\"no model here\",\"max_tokens\":[1,2,[3,{\"a\":[]}]]}");

    private final RequestFactsReader jackson = new RequestFactsReader(Set.of(), null, false);
    private final RequestFactsReader fast = new RequestFactsReader(Set.of());

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"model\":\"llama3:8b\"}|llama3:8b",
        "{\"messages\":[{\"content\":\"x\\\"y\"}],\"model\":\"a\"}|a",
        "{\"model\":\"first\",\"model\":\"second\"}|first",
        "{\"model\":7,\"model\":\"second\"}|(none)",
        "{\"model\":{\"id\":\"x\"}}|(none)",
        "{\"prompt\":\"x\"}|(none)",
        " \n\t{ } |(none)",
    })
    void readsWhatJacksonReads(String body, String expected) {
        String got = TopLevelModel.find(buf(body), false);
        assertThat(got == TopLevelModel.NONE ? "(none)" : got).isEqualTo(expected);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"mod\\u0065l\":\"x\"}",          // an escaped field name: Jackson decodes it
        "{\"model\":\"caf\u00e9\"}",        // above ASCII in the model
        "{\"model\":\"a\\/b\"}",            // an escape in the model
        "{\"a\":01,\"model\":\"x\"}",       // a number Jackson refuses
        "{\"a\":tru,\"model\":\"x\"}",
        "{'model':'x'}",
        "[\"model\"]",
        "{\"a\":1",
    })
    void declinesWhatItDoesNotRead(String body) {
        assertThat(TopLevelModel.find(buf(body), false)).isSameAs(TopLevelModel.DECLINED);
    }

    @Test
    void declinesNestingDeeperThanItsBound() {
        String deep = "[".repeat(TopLevelModel.MAX_DEPTH + 1) + "]".repeat(TopLevelModel.MAX_DEPTH + 1);
        assertThat(TopLevelModel.find(buf("{\"a\":" + deep + ",\"model\":\"x\"}"), false)).isSameAs(TopLevelModel.DECLINED);
        String shallow = "[".repeat(TopLevelModel.MAX_DEPTH) + "]".repeat(TopLevelModel.MAX_DEPTH);
        assertThat(TopLevelModel.find(buf("{\"a\":" + shallow + ",\"model\":\"x\"}"), false)).isEqualTo("x");
    }

    @Test
    void ollamaNameCountsOnItsPathsOnlyAndModelBeatsIt() {
        assertThat(TopLevelModel.find(buf("{\"name\":\"a\",\"name\":\"b\"}"), true)).isEqualTo("b");
        assertThat(TopLevelModel.find(buf("{\"name\":\"a\"}"), false)).isSameAs(TopLevelModel.NONE);
        assertThat(TopLevelModel.find(buf("{\"name\":\"a\",\"model\":\"m\"}"), true)).isEqualTo("m");
    }

    @Test
    void realShapesTakeTheFastPath() {
        for (String body : BODIES) {
            assertThat(TopLevelModel.find(buf(body), body.contains("\"name\""))).as(body).isNotSameAs(TopLevelModel.DECLINED);
        }
    }

    @Test
    void agreesWithJacksonOnSeededMutationsOfRealShapes() {
        Random random = new Random(37);
        byte[] alphabet = "{}[]\":,\\ \n-+.0123456789eEtrufalsnmodeu".getBytes(StandardCharsets.US_ASCII);
        int declined = 0;
        int compared = 0;
        for (int n = 0; n < 30_000; n++) {
            byte[] body = BODIES.get(random.nextInt(BODIES.size())).getBytes(StandardCharsets.UTF_8);
            List<Byte> bytes = new ArrayList<>();
            for (byte x : body) {
                bytes.add(x);
            }
            for (int m = 1 + random.nextInt(3); m > 0 && !bytes.isEmpty(); m--) {
                int at = random.nextInt(bytes.size());
                byte with = random.nextInt(10) == 0 ? (byte) (0x80 + random.nextInt(128))
                        : alphabet[random.nextInt(alphabet.length)];
                switch (random.nextInt(4)) {
                    case 0 -> bytes.set(at, with);
                    case 1 -> bytes.add(at, with);
                    case 2 -> bytes.remove(at);
                    default -> bytes.subList(at, bytes.size()).clear();
                }
            }
            byte[] mutated = new byte[bytes.size()];
            for (int k = 0; k < mutated.length; k++) {
                mutated[k] = bytes.get(k);
            }
            boolean nameIsModel = random.nextBoolean();
            String uri = nameIsModel ? "/api/show" : "/v1/chat/completions";
            String got = TopLevelModel.find(Unpooled.wrappedBuffer(mutated), nameIsModel);
            if (got == TopLevelModel.DECLINED) {
                declined++;
                continue;
            }
            compared++;
            RequestFacts reference = jackson.read(Unpooled.wrappedBuffer(mutated), uri);
            assertThat(fast.read(Unpooled.wrappedBuffer(mutated), uri))
                    .as("%s", new String(mutated, StandardCharsets.UTF_8)).isEqualTo(reference);
        }
        assertThat(compared).as("bodies the fast path read (%d declined)", declined).isGreaterThan(5_000);
    }

    @Test
    void readsAcrossTheComponentsOfAnAggregatedBody() {
        CompositeByteBuf body = Unpooled.compositeBuffer();
        body.addComponent(true, buf("{\"messages\":[{\"content\":\"long"));
        body.addComponent(true, buf(" prompt\"}],\"mo"));
        body.addComponent(true, buf("del\":\"llama3:8b\"}"));
        int before = body.readerIndex();
        assertThat(fast.read(body, "/v1/chat/completions").model()).isEqualTo("llama3:8b");
        assertThat(body.readerIndex()).isEqualTo(before);
        body.release();
    }

    private static ByteBuf buf(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }
}
