package io.heartgate.scheduler.usage;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Usage read from the end of real response bodies (test resources copied from captured payloads). */
class UsageReaderTest {

    private static byte[] sample(String name) throws IOException {
        try (InputStream in = UsageReaderTest.class.getResourceAsStream("/samples/" + name)) {
            return in.readAllBytes();
        }
    }

    private static UsageReader.Usage read(byte[] body) {
        return UsageReader.read(body, body.length);
    }

    private static UsageReader.Usage read(String body) {
        return read(body.getBytes(StandardCharsets.UTF_8));
    }

    /** The last {@code n} bytes, as the proxy keeps them. */
    private static byte[] tail(byte[] body, int n) {
        return Arrays.copyOfRange(body, Math.max(0, body.length - n), body.length);
    }

    @Test
    void ollamasFinalObjectGivesPromptEvalCountAndEvalCount() throws IOException {
        assertThat(read(sample("ollama-api-chat-stream.ndjson"))).isEqualTo(new UsageReader.Usage(33, 48));
        byte[] generate = sample("ollama-api-generate-stream.ndjson");
        assertThat(read(generate)).isEqualTo(new UsageReader.Usage(31, 37));
        assertThat(read(tail(generate, 4096))).as("the end of the body is enough").isEqualTo(new UsageReader.Usage(31, 37));
    }

    @Test
    void aStreamWithoutTheUsageChunkHasNoUsage() throws IOException {
        assertThat(read(sample("vllm-chat-completions-stream.sse"))).isNull();
        assertThat(read("")).isNull();
    }

    @Test
    void theUsageChunkOfAStreamIsReadBeforeDone() throws IOException {
        // vLLM's last chunk with stream_options.include_usage: no choices, usage in vLLM's field order.
        String body = new String(sample("vllm-chat-completions-stream.sse"), StandardCharsets.UTF_8)
                .replace("data: [DONE]", "data: {\"id\":\"chatcmpl-c25212ff2e9b422b81cc50333723e854\",\"object\":"
                        + "\"chat.completion.chunk\",\"created\":1762727516,\"model\":\"TinyLlama/TinyLlama-1.1B-Chat-v1.0\","
                        + "\"choices\":[],\"usage\":{\"prompt_tokens\":25,\"total_tokens\":61,\"completion_tokens\":36}}\n"
                        + "data: [DONE]");
        assertThat(read(body)).isEqualTo(new UsageReader.Usage(25, 36));
    }

    @Test
    void openAiStreamsCarryUsageNullInEveryChunkButTheLast() {
        String body = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":null}\n\n"
                + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":12,\"total_tokens\":21,"
                + "\"prompt_tokens_details\":{\"cached_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n"
                + "data: [DONE]\n\n";
        assertThat(read(body)).isEqualTo(new UsageReader.Usage(9, 12));
    }

    @Test
    void aWholeAnswerGivesItsUsageObject() {
        String body = "{\n  \"id\": \"chatcmpl-1\",\n  \"choices\": [{\"message\": {\"content\": \"the \\\"usage\\\": "
                + "{\\\"prompt_tokens\\\": 999}\"}}],\n  \"usage\": {\n    \"prompt_tokens\": 7,\n    \"total_tokens\": 10,\n"
                + "    \"completion_tokens\": 3\n  },\n  \"prompt_logprobs\": null,\n  \"kv_transfer_params\": null\n}";
        assertThat(read(body)).isEqualTo(new UsageReader.Usage(7, 3));
    }

    @Test
    void textThatQuotesTheFieldNamesIsNotUsage() {
        assertThat(read("{\"response\":\"say \\\"eval_count\\\": 5\",\"done\":false}")).isNull();
    }

    @Test
    void anEmbeddingAnswerCountsPromptTokensOnly() {
        assertThat(read("{\"model\":\"all-minilm\",\"embeddings\":[[0.1]],\"total_duration\":1,\"load_duration\":0,"
                + "\"prompt_eval_count\":8}")).isEqualTo(new UsageReader.Usage(8, 0));
        assertThat(read("{\"object\":\"list\",\"data\":[],\"usage\":{\"prompt_tokens\":8,\"total_tokens\":8,"
                + "\"completion_tokens\":0}}")).isEqualTo(new UsageReader.Usage(8, 0));
    }

    @Test
    void aCutOffUsageObjectIsNotGuessedAt() {
        assertThat(read("\"usage\":{\"prompt_tokens\":7,\"compl")).isNull();
    }

    /** Anthropic's stream, in the shape of its Messages API documentation: input at the start, output at the end. */
    private static final String ANTHROPIC_STREAM = """
            event: message_start
            data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],\
            "model":"m","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}

            event: content_block_start
            data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

            event: content_block_stop
            data: {"type":"content_block_stop","index":0}

            event: message_delta
            data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}

            event: message_stop
            data: {"type":"message_stop"}

            """;

    @Test
    void anthropicsNamesAreReadTheInputFromTheStreamsFirstEvent() {
        assertThat(read(ANTHROPIC_STREAM)).as("the end: output only").isEqualTo(new UsageReader.Usage(0, 15));
        String start = ANTHROPIC_STREAM.substring(0, ANTHROPIC_STREAM.indexOf("event: content_block_delta"));
        assertThat(read(start).prompt()).as("the first event").isEqualTo(25);
        assertThat(read("{\"id\":\"msg_1\",\"type\":\"message\",\"usage\":{\"input_tokens\":12,"
                + "\"cache_read_input_tokens\":5,\"output_tokens\":7}}")).isEqualTo(new UsageReader.Usage(12, 7));
    }

    @Test
    void theResponsesApisUsageIsReadFromItsLastEvent() {
        String completed = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":"
                + "\"resp_1\",\"usage\":{\"input_tokens\":40,\"input_tokens_details\":{\"cached_tokens\":32},"
                + "\"output_tokens\":9,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":49}}}\n\n";
        assertThat(read(completed)).isEqualTo(new UsageReader.Usage(40, 9));
    }
}
