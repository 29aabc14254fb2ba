package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The usage chunk the proxy asked for and the client did not, kept back from a relayed stream: on
 * vLLM's captured stream (test resource), fed whole, split at every byte, and byte by byte.
 */
class UnaskedUsageChunkTest {

    /** vLLM's last chunk with {@code stream_options.include_usage}: no choices, usage in vLLM's field order. */
    private static final String USAGE = "data: {\"id\":\"chatcmpl-c25212ff2e9b422b81cc50333723e854\",\"object\":"
            + "\"chat.completion.chunk\",\"created\":1762727516,\"model\":\"TinyLlama/TinyLlama-1.1B-Chat-v1.0\","
            + "\"choices\":[],\"usage\":{\"prompt_tokens\":25,\"total_tokens\":61,\"completion_tokens\":36}}";

    /** The captured events, one per line as printed, before {@code data: [DONE]}. */
    private static List<String> events() throws IOException {
        try (InputStream in = UnaskedUsageChunkTest.class.getResourceAsStream("/samples/vllm-chat-completions-stream.sse")) {
            List<String> events = new ArrayList<>(List.of(new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")));
            assertThat(events.remove(events.size() - 1)).isEqualTo("data: [DONE]");
            return events;
        }
    }

    /** The stream as it is on the wire: each event ends with a blank line; with or without the usage chunk. */
    private static String wire(String eol, boolean usage) throws IOException {
        StringBuilder s = new StringBuilder();
        for (String e : events()) {
            s.append(e).append(eol).append(eol);
        }
        if (usage) {
            s.append(USAGE).append(eol).append(eol);
        }
        return s.append("data: [DONE]").append(eol).append(eol).toString();
    }

    private static HttpContent content(String s, boolean last) {
        var buf = Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
        return last ? new DefaultLastHttpContent(buf) : new DefaultHttpContent(buf);
    }

    /** Relays {@code chunks} through a fresh, active filter; returns what the client got, chunk by chunk ({@code null}: nothing). */
    private static List<String> relay(boolean active, List<String> chunks) {
        UnaskedUsageChunk filter = new UnaskedUsageChunk();
        filter.start(active);
        List<String> got = new ArrayList<>();
        for (int i = 0; i < chunks.size(); i++) {
            boolean last = i == chunks.size() - 1;
            HttpContent in = content(chunks.get(i), last);
            HttpContent out = filter.shown(in, last);
            if (out == null) {
                assertThat(last).as("the last chunk always goes").isFalse();
                assertThat(in.refCnt()).as("released").isZero();
                got.add(null);
                continue;
            }
            if (out != in) {
                assertThat(in.refCnt()).as("the replaced chunk is released").isZero();
                assertThat(out instanceof DefaultLastHttpContent).isEqualTo(last);
            }
            got.add(out.content().toString(StandardCharsets.UTF_8));
            out.release();
        }
        return got;
    }

    private static String joined(List<String> got) {
        StringBuilder s = new StringBuilder();
        got.forEach(g -> s.append(g == null ? "" : g));
        return s.toString();
    }

    /** Splits {@code s} into its events, each with its blank line, as vLLM writes them; the last piece empty (the chunked end). */
    private static List<String> byEvent(String s, String eol) {
        List<String> chunks = new ArrayList<>();
        for (String e : s.split(eol + eol)) {
            chunks.add(e + eol + eol);
        }
        chunks.add("");
        return chunks;
    }

    @Test
    void theUsageEventGoesWithItsBlankLineAndEverythingElseIsUntouched() throws IOException {
        for (String eol : new String[] {"\n", "\r\n"}) {
            List<String> got = relay(true, byEvent(wire(eol, true), eol));
            assertThat(joined(got)).isEqualTo(wire(eol, false));
            int usageAt = got.size() - 3;
            assertThat(got.get(usageAt)).as("the usage event's chunk: nothing written").isNull();
            assertThat(got.get(usageAt + 1)).isEqualTo("data: [DONE]" + eol + eol);
        }
    }

    @Test
    void eventsSplitAtAnyByteComeOutTheSame() throws IOException {
        String in = wire("\n", true);
        String expected = wire("\n", false);
        for (int at = 0; at <= in.length(); at++) {
            assertThat(joined(relay(true, List.of(in.substring(0, at), in.substring(at), ""))))
                    .as("split at " + at).isEqualTo(expected);
            assertThat(joined(relay(true, List.of(in.substring(0, at), in.substring(at))))).as("split at " + at)
                    .isEqualTo(expected);
        }
        List<String> bytes = new ArrayList<>();
        wire("\r\n", true).chars().forEach(c -> bytes.add(String.valueOf((char) c)));
        bytes.add("");
        assertThat(joined(relay(true, bytes))).as("byte by byte").isEqualTo(wire("\r\n", false));
    }

    @Test
    void wholeLinesThatAreNotTheUsageEventPassAsTheSameChunks() throws IOException {
        UnaskedUsageChunk filter = new UnaskedUsageChunk();
        filter.start(true);
        for (String chunk : byEvent(wire("\n", false), "\n")) {
            HttpContent in = content(chunk, false);
            assertThat(filter.shown(in, false)).isSameAs(in);
            in.release();
        }
    }

    @Test
    void inactiveItPassesEverything() throws IOException {
        assertThat(joined(relay(false, byEvent(wire("\n", true), "\n")))).isEqualTo(wire("\n", true));
    }

    @Test
    void onlyAUsageOnlyChunkThatIsAnEventOfItsOwnGoes() {
        // llama.cpp's last chunk: a choice with its finish_reason, and the usage beside it.
        String both = "data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],\"usage\":"
                + "{\"completion_tokens\":5,\"prompt_tokens\":9,\"total_tokens\":14}}\n\n";
        // A token whose text is the usage chunk's shape: quotes inside a string are escaped.
        String text = "data: {\"choices\":[{\"delta\":{\"content\":\"\\\"choices\\\":[],\\\"usage\\\":{}\"}}]}\n\n";
        String noUsage = "data: {\"choices\":[]}\n\n";
        String notJson = "data: {\"choices\":[],\"usage\":{\n\n";
        // One event of two data lines, as printed without blank lines: its usage line is not an event of its own.
        String printed = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n" + USAGE + "\n\n";
        for (String s : List.of(both, text, noUsage, notJson, printed)) {
            assertThat(joined(relay(true, List.of(s, "data: [DONE]\n\n", "")))).isEqualTo(s + "data: [DONE]\n\n");
        }
        String spaced = "data:{ \"usage\" : {\"prompt_tokens\":1,\"completion_tokens\":2}, \"choices\" : [ ] }\n\n";
        assertThat(joined(relay(true, List.of(spaced, "data: [DONE]\n\n", "")))).isEqualTo("data: [DONE]\n\n");
    }

    @Test
    void aLineTooLongToBeTheUsageChunkGoesOnAsItComes() {
        String head = "data: {\"choices\":[{\"delta\":{\"content\":\"" + "x".repeat(UnaskedUsageChunk.MOST);
        String rest = "\"}}]}\n\n";
        List<String> got = relay(true, List.of("data: {\"choices\":[]", head, "x", rest, USAGE + "\n\n", ""));
        assertThat(got.get(0)).as("short: held until its end").isNull();
        assertThat(got.get(1)).as("too long with it: passed on").isEqualTo("data: {\"choices\":[]" + head);
        assertThat(got.get(2)).isEqualTo("x");
        assertThat(joined(got)).isEqualTo("data: {\"choices\":[]" + head + "x" + rest);
    }

    @Test
    void aStreamWhoseLinesEndWithABareCrGoesOnAsItComes() {
        // SSE allows CR alone as an end of line; no line feed would ever release a held line.
        List<String> chunks = List.of("data: {\"choices\":[{}]}\r\r", USAGE + "\r\r", "data: [DONE]\r\r", "");
        assertThat(relay(true, chunks)).containsExactlyElementsOf(chunks);
        // A CR at a chunk's end may be a CRLF's first half: held until the next byte tells.
        assertThat(relay(true, List.of("data: {\"choices\":[{}]}\r", "\rdata: [DONE]\r\r", "")))
                .containsExactly(null, "data: {\"choices\":[{}]}\r\rdata: [DONE]\r\r", "");
        assertThat(relay(true, List.of("data: {\"choices\":[{}]}\r", "\n\r\n", USAGE + "\r\n\r\n", "")))
                .as("CRLF split across chunks is still judged by lines")
                .containsExactly(null, "data: {\"choices\":[{}]}\r\n\r\n", null, "");
    }

    @Test
    void aLargeChunksScratchSpaceIsLetGoWhenTheAnswerEnds() {
        UnaskedUsageChunk filter = new UnaskedUsageChunk();
        filter.start(true);
        String big = "data: {\"choices\":[{\"delta\":{\"content\":\"" + "x".repeat(4 * UnaskedUsageChunk.KEPT) + "\"}}]}\n\n";
        filter.shown(content(big, false), false).release();
        assertThat(filter.scratchBytes()).as("while the answer runs").isGreaterThan(UnaskedUsageChunk.KEPT);
        filter.shown(content("data: [DONE]\n\n", true), true).release();
        assertThat(filter.scratchBytes()).as("after its last chunk").isLessThanOrEqualTo(2 * UnaskedUsageChunk.KEPT);
        filter.shown(content(big, false), false).release();
        filter.start(false);
        assertThat(filter.scratchBytes()).as("after an answer cut short, at the next").isLessThanOrEqualTo(2 * UnaskedUsageChunk.KEPT);
    }

    @Test
    void aLastLineWithoutAnEndIsSentAsItCame() {
        assertThat(relay(true, List.of("data: {\"choices\":[{}]}\n\ndata: [DO", "NE]"))).containsExactly(
                "data: {\"choices\":[{}]}\n\n", "data: [DONE]");
        assertThat(relay(true, List.of(USAGE + "\n\n" + USAGE))).as("a cut event is no event to keep back")
                .containsExactly(USAGE);
    }
}
