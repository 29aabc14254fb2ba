package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class BodyTailTest {

    private static String kept(BodyTail tail) {
        return new String(Arrays.copyOf(tail.bytes(), tail.length()), StandardCharsets.US_ASCII);
    }

    private static ByteBuf chunk(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
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
        assertThat(tail.usage()).isEqualTo(new io.heartgate.scheduler.usage.UsageReader.Usage(1, 2));
    }
}
