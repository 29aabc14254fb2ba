package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.usage.UsageReader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class BodyTailTest {

    private static String kept(BodyTail tail) {
        return new String(Arrays.copyOf(tail.bytes(), tail.length()), StandardCharsets.US_ASCII);
    }

    private static ByteBuf chunk(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    /** A whole JSON answer's tail, watched, given {@code body} in chunks of {@code size} bytes. */
    private static BodyTail watchedInChunks(String body, int size) {
        BodyTail tail = new BodyTail();
        tail.start(true, true);
        for (int at = 0; at < body.length(); at += size) {
            ByteBuf c = chunk(body.substring(at, Math.min(body.length(), at + size)));
            tail.add(c);
            c.release();
        }
        return tail;
    }

    @Test
    void keepsTheLastBytesAcrossChunksAndWrapsAroundItsBuffer() {
        BodyTail tail = new BodyTail();
        tail.start(true);
        assertThat(tail.length()).isZero();
        StringBuilder all = new StringBuilder();
        for (int i = 0; i < 500; i++) {
            String s = "data: {\"n\":" + i + "}\n\n";
            all.append(s);
            ByteBuf c = chunk(s);
            tail.add(c);
            assertThat(c.readerIndex()).as("indexes untouched").isZero();
            c.release();
        }
        String expected = all.substring(all.length() - BodyTail.SIZE);
        assertThat(kept(tail)).isEqualTo(expected);
    }

    @Test
    void aSmallAnswerKeepsASmallBufferAndALongerOneGrowsItWithoutLosingBytes() {
        BodyTail tail = new BodyTail();
        tail.start(true);
        ByteBuf small = chunk("x".repeat(600));
        tail.add(small);
        small.release();
        assertThat(tail.bytes()).as("a small answer's buffer").hasSize(BodyTail.INITIAL);
        // The connection's next answer grows the same buffer across every size up to the window.
        tail.start(true);
        StringBuilder all = new StringBuilder();
        for (int i = 0; all.length() < 3 * BodyTail.SIZE; i++) {
            String s = "line " + i + " " + "y".repeat(i % 97) + "\n";
            all.append(s);
            ByteBuf c = chunk(s);
            tail.add(c);
            c.release();
            String expected = all.length() <= BodyTail.SIZE ? all.toString() : all.substring(all.length() - BodyTail.SIZE);
            assertThat(kept(tail)).isEqualTo(expected);
        }
    }

    @Test
    void aChunkLargerThanTheBufferLeavesItsEnd() {
        BodyTail tail = new BodyTail();
        tail.start(true);
        tail.add(chunk("abc"));
        String big = "x".repeat(BodyTail.SIZE + 10) + "END";
        ByteBuf c = chunk(big);
        c.readerIndex(5); // only the readable part counts
        tail.add(c);
        assertThat(kept(tail)).isEqualTo(big.substring(big.length() - BodyTail.SIZE));
        tail.start(true);
        tail.add(chunk("next response"));
        assertThat(kept(tail)).isEqualTo("next response");
    }

    @Test
    void aResponseNotCountedKeepsNothingAndReportsNoUsage() {
        BodyTail tail = new BodyTail();
        tail.start(false);
        tail.add(chunk("{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}"));
        assertThat(tail.length()).isZero();
        assertThat(tail.usage()).isNull();
        tail.start(true);
        tail.add(chunk("{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}"));
        assertThat(tail.usage()).isEqualTo(new UsageReader.Usage(1, 2));
    }

    /** A vLLM chat answer asked for prompt_logprobs: they follow its usage, for about 60 bytes a prompt token. */
    private static String answerWithLogprobsAfterUsage(int promptTokens) {
        StringBuilder lp = new StringBuilder("[null");
        for (int i = 1; i < promptTokens; i++) {
            lp.append(",{\"").append(1000 + i).append("\":{\"logprob\":-1.2345678,\"rank\":1,\"decoded_token\":\"tok\"}}");
        }
        lp.append(']');
        return "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{\"index\":0,"
                + "\"message\":{\"role\":\"assistant\",\"content\":\"say \\\"usage\\\": 9\"}}],\"usage\":{\"prompt_tokens\":"
                + promptTokens + ",\"total_tokens\":" + (promptTokens + 2) + ",\"completion_tokens\":2,"
                + "\"prompt_tokens_details\":null},\"prompt_logprobs\":" + lp + ",\"kv_transfer_params\":null}";
    }

    @Test
    void aWholeJsonAnswersUsageFollowedByMoreThanTheWindowIsStillRead() {
        for (int tokens : new int[] {10, 70, 201, 2000}) {
            String body = answerWithLogprobsAfterUsage(tokens);
            for (int size : new int[] {1, 7, 100, 1500, body.length()}) { // however the node's writes were cut
                BodyTail tail = watchedInChunks(body, size);
                assertThat(tail.usage()).as(tokens + " prompt tokens, chunks of " + size)
                        .isEqualTo(new UsageReader.Usage(tokens, 2));
            }
        }
    }

    @Test
    void aUsageCutWhereTheWindowBeginsIsStillRead() {
        String usage = "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6}";
        for (int cut = 1; cut < 7; cut++) { // the first `cut` bytes of "usage" leave the window
            String body = "{\"x\":\"" + "a".repeat(3000) + "\"," + usage + ",\"y\":\"";
            // After the usage come `,"y":"` (6 bytes), then the b's and `"}`: the window's SIZE bytes in all.
            String tailPart = "b".repeat(BodyTail.SIZE - (usage.length() - cut) - 6 - 2) + "\"}";
            BodyTail tail = new BodyTail();
            tail.start(true, true);
            tail.add(chunk(body));
            tail.add(chunk(tailPart));
            assertThat(kept(tail)).startsWith(usage.substring(cut));
            assertThat(tail.usage()).as("cut " + cut).isEqualTo(new UsageReader.Usage(5, 6));
        }
    }

    @Test
    void aQuoteLeavingTheWindowLastDoesNotHideAHeldUsage() {
        String start = "{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2},\"pad\":\"" + "a".repeat(1100) + "\"";
        String window = ",\"q\":\"" + "b".repeat(BodyTail.SIZE - 8) + "\"}";
        assertThat(window).hasSize(BodyTail.SIZE);
        BodyTail tail = new BodyTail();
        tail.start(true, true);
        tail.add(chunk(start));
        tail.add(chunk(window));
        assertThat(tail.usage()).isEqualTo(new UsageReader.Usage(5, 2));
    }

    @Test
    void aStringUsageBeforeOrAfterTheObjectNeverTakesItsPlace() {
        String object = "\"usage\":{\"prompt_tokens\":5,\"total_tokens\":7,\"completion_tokens\":2}";
        // vLLM writes tokens unescaped in prompt_logprobs: a prompt holding the word makes a value "usage".
        String decoy = "{\"7\":{\"logprob\":-1.0,\"rank\":1,\"decoded_token\":\"usage\"}}";
        String after = "{\"choices\":[]," + object + ",\"prompt_logprobs\":[null," + "{\"1\":{}},".repeat(200)
                + decoy + "," + "{\"2\":{}},".repeat(700) + "null]}";
        for (int offset = 800; offset < 1100; offset += 7) {
            String before = "{\"choices\":[{\"message\":{\"content\":\"x\"},\"logprobs\":[" + decoy + ","
                    + "{\"3\":{}},".repeat(offset / 9) + "null]}]," + object + ",\"prompt_logprobs\":[null,"
                    + "{\"4\":{}},".repeat(700) + "null]}";
            for (String body : List.of(after, before)) {
                for (int size : new int[] {1, 7, 512, 1000, body.length()}) {
                    BodyTail tail = watchedInChunks(body, size);
                    assertThat(tail.usage()).as("chunks of " + size).isEqualTo(
                            new UsageReader.Usage(5, 2));
                }
            }
        }
    }

    @Test
    void aStreamOrAnUnwatchedAnswerLooksAtNothingButTheWindow() {
        String body = answerWithLogprobsAfterUsage(201);
        BodyTail tail = new BodyTail();
        tail.start(true, false);
        tail.add(chunk(body));
        assertThat(tail.usage()).isNull();
    }

    @Test
    void aCutAnswersEventsAreEstimatedFromTheWindowScaledToEveryByte() {
        BodyTail sse = new BodyTail();
        sse.start(true);
        for (int i = 0; i < 500; i++) { // 500 events of 48 to 50 bytes: 24 KiB, six windows
            ByteBuf c = chunk("data: {\"choices\":[{\"delta\":{\"content\":\"t" + i + "\"}}]}\n\n");
            sse.add(c);
            c.release();
        }
        assertThat(sse.eventsEstimate()).isBetween(495L, 505L);

        BodyTail ndjson = new BodyTail();
        ndjson.start(true);
        ndjson.add(chunk("{\"message\":{\"content\":\"a\"},\"done\":false}\n{\"message\":{\"content\":\"b\"},\"done\":false}\n"));
        assertThat(ndjson.eventsEstimate()).isEqualTo(2);
        BodyTail none = new BodyTail();
        none.start(true);
        assertThat(none.eventsEstimate()).isZero();
    }
}
