package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
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
}
