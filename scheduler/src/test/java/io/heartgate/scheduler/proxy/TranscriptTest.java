package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TranscriptTest {

    private static HttpContent chunk(String s) {
        return new DefaultHttpContent(Unpooled.copiedBuffer(s, StandardCharsets.UTF_8));
    }

    private static String text(HttpContent c) {
        String s = c.content().toString(StandardCharsets.UTF_8);
        c.release();
        return s;
    }

    private static Transcript transcript() {
        Transcript t = new Transcript();
        t.from(new TranscriptBuffers());
        return t;
    }

    @Test
    void anAnswersBufferIsTheLoopsSpareOneAndGoesBackWhenItEnds() {
        TranscriptBuffers loop = new TranscriptBuffers();
        Transcript t = new Transcript();
        t.from(loop);
        t.begin(true, false);
        text(t.whole(chunk("data: 1\n\n")));
        byte[] used = t.bytes();
        t.end();
        assertThat(loop.spare()).isEqualTo(1);
        t.begin(true, false);
        assertThat(t.bytes()).as("the same buffer, not a new one").isSameAs(used);
        t.begin(false, false);
        assertThat(loop.spare()).as("an answer not kept holds none").isEqualTo(1);
    }

    @Test
    void aChunkEndingOnAnEventsEndPassesThroughUntouched() {
        Transcript t = transcript();
        t.begin(true, false);
        HttpContent in = chunk("data: {\"a\":1}\n\n");
        HttpContent out = t.whole(in);
        assertThat(out).isSameAs(in);
        out.release();
        assertThat(t.relayed()).isEqualTo(15);
    }

    @Test
    void aChunkEndingInsideAnEventIsSplitAndItsEndHeldUntilTheRestComes() {
        Transcript t = transcript();
        t.begin(true, false);
        assertThat(text(t.whole(chunk("data: 1\n\ndata: 2")))).isEqualTo("data: 1\n\n");
        assertThat(t.whole(chunk(" and"))).as("still no whole event").isNull();
        assertThat(text(t.whole(chunk(" more\r\n\r\ndata: 3\n\n")))).isEqualTo("data: 2 and more\r\n\r\ndata: 3\n\n");
        assertThat(t.relayed()).isEqualTo(new String(t.bytes(), 0, t.relayed(), StandardCharsets.UTF_8).length());
    }

    @Test
    void noMoreThanHoldMaxIsEverHeld() {
        Transcript t = transcript();
        t.begin(true, false);
        String noEvents = "x".repeat(Transcript.HOLD_MAX + 1);
        assertThat(text(t.whole(chunk(noEvents)))).as("not made of events: relayed as it comes").isEqualTo(noEvents);
        assertThat(t.whole(chunk("y"))).as("a short tail after it is held again").isNull();
    }

    @Test
    void ndjsonIsHeldByLineAndTheLastChunkTakesWhatIsHeld() {
        Transcript t = transcript();
        t.begin(true, true);
        assertThat(text(t.whole(chunk("{\"a\":1}\n{\"b\"")))).isEqualTo("{\"a\":1}\n");
        assertThat(text(t.last(new DefaultLastHttpContent(Unpooled.copiedBuffer(":2}\n", StandardCharsets.UTF_8)))))
                .isEqualTo("{\"b\":2}\n");
    }

    @Test
    void aCutDropsTheHeldPartAndAStreamNotKeptIsNeverTouched() {
        Transcript t = transcript();
        t.begin(true, false);
        text(t.whole(chunk("data: 1\n\ndata: 2")));
        t.cut();
        assertThat(t.relayed()).isEqualTo(9);
        assertThat(text(t.whole(chunk("data: 3\n\n")))).as("the held part is gone").isEqualTo("data: 3\n\n");

        Transcript off = transcript();
        off.begin(false, false);
        HttpContent in = chunk("data: 1");
        assertThat(off.whole(in)).isSameAs(in);
        in.release();
    }
}
