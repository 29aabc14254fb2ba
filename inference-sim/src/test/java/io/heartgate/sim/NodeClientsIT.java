package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Drives the simulator with the official {@code openai} and {@code ollama} npm client libraries, to
 * prove the wire formats are close enough for real clients.
 */
class NodeClientsIT {

    @Test
    void officialClientsStreamAChatFromTheSim(@TempDir Path dir) throws Exception {
        NodeClients.install(dir);

        try (SimHarness sim = new SimHarness(new SimConfigBuilder("node-js", List.of("llama3:8b", "qwen2.5:7b")).build())) {
            NodeClients.Run clients = NodeClients.chat(dir, "http://127.0.0.1:" + sim.server.port(), "llama3:8b");

            assertThat(clients.status()).as(clients.output()).isZero();
            String expected = new TextSource("node-js").text(8);
            assertThat(clients.output()).contains("OPENAI \"" + expected + "\"");
            assertThat(clients.output()).contains("OLLAMA \"" + expected + "\"");
            assertThat(clients.output()).contains("TAGS [\"llama3:8b\",\"qwen2.5:7b\"]");
        }
    }

    @Test
    void theOpenaiClientStreamsContinuesAndRetrievesAResponse(@TempDir Path dir) throws Exception {
        NodeClients.install(dir);

        try (SimHarness sim = new SimHarness(new SimConfigBuilder("node-rs", List.of("llama3:8b"))
                .prefill(1000, 16, Duration.ZERO).build())) {
            NodeClients.Run run = NodeClients.responses(dir, "http://127.0.0.1:" + sim.server.port(), "llama3:8b");

            assertThat(run.status()).as(run.output()).isZero();
            String expected = new TextSource("node-rs").text(8);
            assertThat(run.output()).contains("STREAM {\"text\":\"" + expected + "\",\"types\":[\"response.created\","
                    + "\"response.in_progress\",\"response.output_item.added\",\"response.content_part.added\","
                    + "\"response.output_text.delta\",\"response.output_text.done\",\"response.content_part.done\","
                    + "\"response.output_item.done\",\"response.completed\"],\"status\":\"completed\","
                    + "\"output\":\"" + expected + "\",\"outputTokens\":8}");
            assertThat(run.output()).containsPattern("CONTINUED \\{\"text\":\"" + Pattern.quote(expected)
                    + "\",\"previous\":true,\"cached\":[1-9][0-9]*}");
            assertThat(run.output()).contains("RETRIEVED {\"same\":true,\"text\":\"" + expected + "\"}");
            assertThat(run.output()).contains("MISSING {\"status\":404,\"type\":\"invalid_request_error\","
                    + "\"param\":\"response_id\",\"message\":\"Response with id 'resp_0123' not found.\"}");
        }
    }
}
