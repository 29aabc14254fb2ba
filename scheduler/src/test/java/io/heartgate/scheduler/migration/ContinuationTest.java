package io.heartgate.scheduler.migration;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ContinuationTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final byte[] CHAT = ("{\"model\":\"m\",\"stream\":true,\"max_completion_tokens\":5,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}").getBytes(StandardCharsets.UTF_8);

    private static Sent sent(String sse) {
        byte[] b = sse.getBytes(StandardCharsets.UTF_8);
        return Sent.read(Form.OPENAI_CHAT, b, b.length);
    }

    private static String chunk(String delta, String finish) {
        return "data: {\"id\":\"x\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":" + delta
                + ",\"finish_reason\":" + finish + "}]}\n\n";
    }

    @Test
    void sentReadsTheTextTheIdsAndLeavesOutAPartEventAtTheEnd() {
        Sent s = sent(chunk("{\"role\":\"assistant\",\"content\":\"\"}", "null") + chunk("{\"content\":\"Hi\"}", "null")
                + chunk("{\"content\":\" there\"}", "null") + "data: {\"id\":\"x\",\"choi");
        assertThat(s.text()).isEqualTo("Hi there");
        assertThat(s.tokens()).isEqualTo(2);
        assertThat(s.id()).isEqualTo("x");
        assertThat(s.finished()).isFalse();
        assertThat(Continuation.refusal(s)).isNull();
    }

    @Test
    void tgiGetsNoFlagsAndOllamaOrAGenericServerIsNotAskedToContinue() throws Exception {
        Sent s = sent(chunk("{\"content\":\"Hi \\uFFFD\"}", "null"));
        JsonNode tgi = JSON.readTree(Continuation.of(Form.OPENAI_CHAT, CHAT, s, "tgi", null).body());
        assertThat(tgi.has("continue_final_message")).isFalse();
        assertThat(tgi.get("messages").get(1).get("content").asText()).isEqualTo("Hi");
        assertThat(tgi.get("max_completion_tokens").asInt()).isEqualTo(4);
        assertThat(Continuation.of(Form.OPENAI_CHAT, CHAT, s, "ollama", null).refusal()).contains("ollama");
        assertThat(Continuation.of(Form.OPENAI_CHAT, CHAT, s, "openai", null).refusal()).contains("openai");
    }

    @Test
    void whatCannotBeContinuedSaysWhy() {
        assertThat(Continuation.refusal(sent(chunk("{\"content\":\"a\"}", "\"stop\"")))).contains("ended");
        assertThat(Continuation.refusal(sent(chunk("{\"tool_calls\":[{\"index\":0}]}", "null")))).contains("tool call");
        assertThat(Continuation.refusal(sent(chunk("{\"reasoning_content\":\"hmm\"}", "null")))).contains("reasoning");
        Sent s = sent(chunk("{\"content\":\"a\"}", "null"));
        byte[] two = "{\"n\":2,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}".getBytes(StandardCharsets.UTF_8);
        assertThat(Continuation.of(Form.OPENAI_CHAT, two, s, "vllm", null).refusal()).contains("several choices");
    }

    @Test
    void anAnthropicMessageContinuesOnLlamaCppOnlyAndAfterTheClientsOwnPrefill() throws Exception {
        String sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\"}}\n\n"
                + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                + "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                + "\"delta\":{\"type\":\"text_delta\",\"text\":\" world \"}}\n\n";
        byte[] b = sse.getBytes(StandardCharsets.UTF_8);
        Sent s = Sent.read(Form.ANTHROPIC_MESSAGES, b, b.length);
        assertThat(s.id()).isEqualTo("msg_1");
        assertThat(s.block()).isZero();
        byte[] body = ("{\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
                + "{\"role\":\"assistant\",\"content\":\"Hello\"}]}").getBytes(StandardCharsets.UTF_8);
        assertThat(Continuation.of(Form.ANTHROPIC_MESSAGES, body, s, "vllm", null).refusal()).contains("vllm");
        JsonNode next = JSON.readTree(Continuation.of(Form.ANTHROPIC_MESSAGES, body, s, "llamacpp", null).body());
        assertThat(next.get("messages")).hasSize(2);
        assertThat(next.get("messages").get(1).get("content").asText()).isEqualTo("Hello world");
        assertThat(next.get("max_tokens").asInt()).isEqualTo(9);
    }

    @Test
    void anOllamaChatContinuesOnlyWhereTheNodeSaidItsTemplateDoes() throws Exception {
        String ndjson = "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"Hi \"},\"done\":false}\n";
        byte[] b = ndjson.getBytes(StandardCharsets.UTF_8);
        Sent s = Sent.read(Form.OLLAMA_CHAT, b, b.length);
        assertThat(s.text()).isEqualTo("Hi ");
        byte[] body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"options\":{\"num_predict\":4}}"
                .getBytes(StandardCharsets.UTF_8);
        assertThat(Continuation.of(Form.OLLAMA_CHAT, body, s, "ollama", null).refusal()).contains("not known");
        assertThat(Continuation.of(Form.OLLAMA_CHAT, body, s, "ollama", false).refusal()).contains("does not");
        JsonNode next = JSON.readTree(Continuation.of(Form.OLLAMA_CHAT, body, s, "ollama", true).body());
        assertThat(next.get("messages").get(1).get("content").asText()).isEqualTo("Hi");
        assertThat(next.get("options").get("num_predict").asInt()).isEqualTo(3);
    }

    @Test
    void aSpliceKeepsACharacterAndACrlfThatAReadSplitWhole() throws Exception {
        Sent s = sent(chunk("{\"content\":\"a\"}", "null"));
        Splice splice = new Splice(Form.OPENAI_CHAT, s, CHAT);
        byte[] event = ("data: {\"id\":\"y\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\u00e9\u732b\"},"
                + "\"finish_reason\":null}]}\r\n\r\ndata: [DONE]\r\n\r\n").getBytes(StandardCharsets.UTF_8);
        int inCharacter = new String(event, StandardCharsets.ISO_8859_1).indexOf('\u00c3') + 1; // inside the two bytes of é
        int inCrlf = new String(event, StandardCharsets.ISO_8859_1).indexOf("\r\n\r\n") + 3;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(splice.next(Arrays.copyOfRange(event, 0, inCharacter)));
        out.writeBytes(splice.next(Arrays.copyOfRange(event, inCharacter, inCrlf)));
        out.writeBytes(splice.next(Arrays.copyOfRange(event, inCrlf, event.length)));
        String[] events = out.toString(StandardCharsets.UTF_8).split("\n\n");
        assertThat(JSON.readTree(events[0].substring(6)).get("choices").get(0).get("delta").get("content").asText())
                .isEqualTo("\u00e9\u732b");
        assertThat(events[1]).isEqualTo("data: [DONE]");
    }

    @Test
    void anAnthropicCutAfterItsBlockClosedNumbersTheNextNodesBlocksAfterIt() throws Exception {
        String sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n"
                + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                + "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                + "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
                + "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n";
        byte[] b = sse.getBytes(StandardCharsets.UTF_8);
        Sent s = Sent.read(Form.ANTHROPIC_MESSAGES, b, b.length);
        assertThat(s.block()).as("no block open at the cut").isEqualTo(-1);
        assertThat(s.blocks()).isEqualTo(1);
        Splice splice = new Splice(Form.ANTHROPIC_MESSAGES, s, "{}".getBytes(StandardCharsets.UTF_8));
        String out = new String(splice.next(("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                + "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n").getBytes(StandardCharsets.UTF_8)),
                StandardCharsets.UTF_8);
        assertThat(JSON.readTree(out.substring(out.indexOf("data: ") + 6)).get("index").asInt()).isEqualTo(1);
    }

    @Test
    void aCompletionContinuesAsItsPromptFollowedByTheText() throws Exception {
        byte[] body = "{\"prompt\":\"Once\",\"max_tokens\":9,\"stream\":true}".getBytes(StandardCharsets.UTF_8);
        String sse = "data: {\"id\":\"c\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" upon\","
                + "\"finish_reason\":null}]}\n\n";
        byte[] b = sse.getBytes(StandardCharsets.UTF_8);
        JsonNode next = JSON.readTree(Continuation.of(Form.OPENAI_COMPLETIONS, body, Sent.read(Form.OPENAI_COMPLETIONS, b,
                b.length), "ollama", null).body());
        assertThat(next.get("prompt").asText()).isEqualTo("Once upon");
        assertThat(next.get("max_tokens").asInt()).isEqualTo(8);
    }

    @Test
    void aSpliceDropsTheRoleChunkKeepsTheFirstIdsAndSumsUsage() throws Exception {
        Sent s = sent(chunk("{\"content\":\"a \"}", "null"));
        Splice splice = new Splice(Form.OPENAI_CHAT, s, CHAT);
        String out = new String(splice.next(("data: {\"id\":\"y\",\"created\":2,\"model\":\"n\",\"choices\":[{\"index\":0,"
                + "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"y\","
                + "\"created\":2,\"model\":\"n\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"},\"finish_reason\":null}]}"
                + "\n\ndata: {\"id\":\"y\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1,"
                + "\"total_tokens\":5}}\n\ndata: [DO").getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8);
        String[] events = out.split("\n\n");
        assertThat(events).hasSize(2);
        JsonNode text = JSON.readTree(events[0].substring(6));
        assertThat(text.get("id").asText()).isEqualTo("x");
        assertThat(text.get("model").asText()).isEqualTo("m");
        assertThat(text.get("choices").get(0).get("delta").get("content").asText()).isEqualTo("b");
        JsonNode usage = JSON.readTree(events[1].substring(6)).get("usage");
        assertThat(usage.get("prompt_tokens").asInt()).isEqualTo(3 + 4);
        assertThat(usage.get("completion_tokens").asInt()).isEqualTo(2);
        assertThat(new String(splice.next("NE]\n\n".getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8))
                .isEqualTo("data: [DONE]\n\n");
    }
}
