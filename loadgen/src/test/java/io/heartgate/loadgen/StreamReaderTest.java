package io.heartgate.loadgen;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class StreamReaderTest {

    @Test
    void readsARealOllamaChatStream() throws IOException {
        List<StreamEvent> events = sample("ollama-api-chat-stream.ndjson").lines().map(StreamReader::ndjson).toList();

        assertThat(events).hasSize(15);
        assertThat(events.stream().filter(StreamEvent::hasContent)).hasSize(14);
        assertThat(events.stream().map(StreamEvent::content).collect(Collectors.joining()))
                .isEqualTo(" What's-a on your mind? Need-a some help or advice?");
        assertThat(events.subList(0, 14)).noneMatch(StreamEvent::done)
                .allMatch(e -> e.loadNanos() == -1 && e.promptTokens() == -1 && e.error() == null);
        StreamEvent last = events.get(14);
        assertThat(last.done()).isTrue();
        assertThat(last.hasContent()).isFalse();
        assertThat(last.loadNanos()).isEqualTo(33_804_417L);
        assertThat(new Sample(0, 1, "m", null, 0, Outcome.OK, 200, 1, 2, 1, last.loadNanos(), -1, 1, null, null)
                .waitedOnLoad()).as("a real warm Ollama still reports 34 ms").isFalse();
        assertThat(last.promptTokens()).isEqualTo(33);
    }

    @Test
    void readsARealVllmChatStreamOneEventALine() throws IOException {
        List<StreamEvent> events = sample("vllm-chat-completions-stream.sse").lines().map(StreamReader::sse).toList();

        assertThat(events).hasSize(8);
        // The role chunk and the finish chunk carry empty content: neither is a first token.
        assertThat(events.get(0).hasContent()).isFalse();
        assertThat(events.stream().filter(StreamEvent::hasContent)).hasSize(5);
        assertThat(events.stream().map(StreamEvent::content).collect(Collectors.joining())).isEqualTo("GPUs power.");
        assertThat(events.subList(0, 7)).noneMatch(StreamEvent::done);
        assertThat(events.get(7).done()).isTrue();
    }

    @Test
    void readsTheSameStreamWithBlankLinesBetweenEventsAsOnTheWire() throws IOException {
        String wire = sample("vllm-chat-completions-stream.sse").lines().collect(Collectors.joining("\n\n", "", "\n\n"));
        List<StreamEvent> events = wire.lines().map(StreamReader::sse).toList();

        assertThat(events.stream().filter(StreamEvent::hasContent)).hasSize(5);
        assertThat(events.stream().filter(StreamEvent::done)).hasSize(1);
        assertThat(events.get(events.size() - 1)).isEqualTo(StreamEvent.NOTHING);
    }

    @Test
    void readsTextCompletionsAndGenerateAnswers() {
        assertThat(StreamReader.sse("data: {\"choices\":[{\"index\":0,\"text\":\" hi\"}]}").content()).isEqualTo(" hi");
        assertThat(StreamReader.ndjson("{\"model\":\"m\",\"response\":\"The\",\"done\":false}").content()).isEqualTo("The");
        assertThat(StreamReader.sse("data:[DONE]").done()).isTrue();
    }

    @Test
    void readsTheUsageChunksPromptTokens() {
        StreamEvent e = StreamReader.sse("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":41,\"completion_tokens\":8}}");

        assertThat(e.promptTokens()).isEqualTo(41);
        assertThat(e.hasContent()).isFalse();
    }

    @Test
    void readsErrorsInTheStream() {
        assertThat(StreamReader.ndjson("{\"error\":\"model 'x' not found\"}").error()).isEqualTo("model 'x' not found");
        assertThat(StreamReader.sse("data: {\"error\":{\"message\":\"boom\",\"type\":\"InternalServerError\"}}").error())
                .isEqualTo("boom");
        assertThat(StreamReader.ndjson("{\"message\":{\"content\":\"a\"},\"error\":null}").error()).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "not json", "[1,2]", "{\"done\":", "null", "42"})
    void readsNothingFromLinesThatAreNotObjects(String line) {
        assertThat(StreamReader.ndjson(line)).isEqualTo(StreamEvent.NOTHING);
        assertThat(StreamReader.sse("data: " + line)).isEqualTo(StreamEvent.NOTHING);
    }

    @ParameterizedTest
    @ValueSource(strings = {": keep-alive", "event: message", "id: 7", "retry: 100", "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}"})
    void readsNothingFromSseLinesOtherThanData(String line) {
        assertThat(StreamReader.sse(line)).isEqualTo(StreamEvent.NOTHING);
    }

    @Test
    void takesLoadDurationOnlyFromTheFinalObject() {
        assertThat(StreamReader.ndjson("{\"done\":false,\"load_duration\":5}").loadNanos()).isEqualTo(-1);
        assertThat(StreamReader.ndjson("{\"done\":true,\"load_duration\":0}").loadNanos()).isZero();
        assertThat(StreamReader.ndjson("{\"done\":true}").loadNanos()).isEqualTo(-1);
    }

    private static String sample(String name) throws IOException {
        try (InputStream in = StreamReaderTest.class.getResourceAsStream("/samples/" + name)) {
            assertThat(in).as(name).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
