package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.ProxyConfigBuilder;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.Tracing;
import io.heartgate.sim.Faults;
import io.heartgate.sim.NodeClients;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Stream migration end to end on simulated nodes that continue a partial answer as the servers do
 * (llama.cpp's nodes, which take vLLM's continuation flags on chats and prefill Anthropic's
 * messages; Ollama's raw generate): two nodes, each cutting every answer it starts after 5 of its 8
 * tokens; a migrated answer is the first node's 5 tokens followed by the other node's last 3, one
 * stream per dialect, read by a raw client and by the official {@code openai} and {@code ollama}
 * npm clients.
 */
class SimMigrationIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODEL = "llama3:8b";
    /** What a node named {@code name} answers in 8 tokens: its marker and 7 words. */
    private static final String REST = " the GPU streams tokens quickly while the";

    private final List<Vertx> vertxes = new ArrayList<>();
    private final List<SimServer> sims = new ArrayList<>();
    private ProxyServer proxy;
    private SimpleMeterRegistry registry;

    @BeforeEach
    void start() throws Exception {
        NodeTable table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        for (String name : List.of("gpu-a", "gpu-b")) {
            Vertx vertx = Vertx.vertx();
            vertxes.add(vertx);
            SimServer sim = new SimServer(new SimConfigBuilder(name, List.of(MODEL))
                    .timing(8, Duration.ofMillis(2), Duration.ofMillis(5))
                    .faults(new Faults(false, 0, false, 5, null, null)).build(), Clock.systemUTC(), System::nanoTime);
            vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
            sims.add(sim);
            table.apply(Heartbeat.builder(name, "http://127.0.0.1:" + sim.port()).instance("i1").seq(1L)
                    .state(NodeState.UP).backend("llamacpp").intervalMs(60_000).models(List.of(MODEL))
                    .modelInfo(List.of(new ModelInfo(MODEL, null, null, null, null).withPrefill(true))).build(),
                    Instant.now());
        }
        table.publish();
        ProxyConfig c = new ProxyConfigBuilder().build();
        PassiveHealth health = new PassiveHealth(Clock.systemUTC(), c.ejectAfter(), c.ejectFor(), Duration.ofMinutes(5));
        registry = new SimpleMeterRegistry();
        proxy = ProxyServer.start(c, table::snapshot, new RouteSelector(Strategy.ROUND_ROBIN.create()), health, health,
                new ProxyCounters(), new RequestMetrics(registry, Ticker.SYSTEM), Ticker.SYSTEM, new Draining(),
                Stages.Access.OPEN, null, Tracing.OFF);
    }

    @AfterEach
    void stop() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        for (Vertx v : vertxes) {
            v.close().await(10, TimeUnit.SECONDS);
        }
    }

    /** Posts {@code body} to {@code path} and returns the body the client read, to its end or the cut. */
    private String post(String path, String body) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(("POST " + path + " HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n"
                    + "content-length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.UTF_8));
            InputStream in = s.getInputStream();
            assertThat(RawNode.line(in)).startsWith("HTTP/1.1 200");
            while (!RawNode.line(in).isEmpty()) {
                // the head: chunked, checked by the relay's own tests
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (int i = 0; i < 10_000; i++) {
                String size = RawNode.line(in);
                if (size == null || size.isEmpty() || Integer.parseInt(size.trim(), 16) == 0) {
                    break;
                }
                out.write(in.readNBytes(Integer.parseInt(size.trim(), 16)));
                RawNode.line(in);
            }
            return out.toString(StandardCharsets.UTF_8);
        }
    }

    private static String marker(String text) {
        return text.substring(0, text.indexOf(']') + 1);
    }

    private double continued() {
        return registry.counter("heartgate_stream_migrations_total", "result", "continued").count();
    }

    @Test
    void anOpenAiChatGoesOnFromTheOtherNodeAsOneStream() throws Exception {
        String sse = post("/v1/chat/completions", "{\"model\":\"" + MODEL + "\",\"stream\":true,"
                + "\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"Say hello\"}]}");

        StringBuilder text = new StringBuilder();
        List<String> ids = new ArrayList<>();
        JsonNode usage = null;
        for (String e : sse.split("\n\n")) {
            if (e.startsWith("data: {")) {
                JsonNode o = JSON.readTree(e.substring(6));
                ids.add(o.get("id").asText());
                text.append(o.path("choices").path(0).path("delta").path("content").asText(""));
                usage = o.hasNonNull("usage") ? o.get("usage") : usage;
            }
        }
        assertThat(text.toString()).isEqualTo(marker(text.toString()) + REST);
        assertThat(ids).containsOnly(ids.get(0));
        assertThat(usage.get("completion_tokens").asInt()).isEqualTo(8);
        assertThat(sse).endsWith("data: [DONE]\n\n");
        assertThat(continued()).isEqualTo(1);
    }

    @Test
    void anOpenAiCompletionGoesOnFromItsPromptAndTheTextSent() throws Exception {
        String sse = post("/v1/completions", "{\"model\":\"" + MODEL + "\",\"stream\":true,\"prompt\":\"Say hello\"}");

        StringBuilder text = new StringBuilder();
        for (String e : sse.split("\n\n")) {
            if (e.startsWith("data: {")) {
                text.append(JSON.readTree(e.substring(6)).path("choices").path(0).path("text").asText(""));
            }
        }
        assertThat(text.toString()).isEqualTo(marker(text.toString()) + REST);
        assertThat(sse).endsWith("data: [DONE]\n\n");
    }

    @Test
    void anOllamaRawGenerateGoesOnAndItsLastObjectCountsBothNodes() throws Exception {
        String ndjson = post("/api/generate", "{\"model\":\"" + MODEL + "\",\"raw\":true,\"prompt\":\"Say hello\"}");

        StringBuilder text = new StringBuilder();
        JsonNode last = null;
        for (String line : ndjson.split("\n")) {
            last = JSON.readTree(line);
            text.append(last.path("response").asText(""));
            assertThat(last.get("model").asText()).isEqualTo(MODEL);
        }
        assertThat(text.toString()).isEqualTo(marker(text.toString()) + REST);
        assertThat(last.get("done").asBoolean()).isTrue();
        assertThat(last.get("eval_count").asInt()).isEqualTo(8);
    }

    @Test
    void anOllamaChatGoesOnWhereTheNodesTemplateContinuesTheLastTurn() throws Exception {
        String ndjson = post("/api/chat", "{\"model\":\"" + MODEL + "\",\"messages\":[{\"role\":\"user\","
                + "\"content\":\"Say hello\"}]}");

        StringBuilder text = new StringBuilder();
        JsonNode last = null;
        for (String line : ndjson.split("\n")) {
            last = JSON.readTree(line);
            text.append(last.path("message").path("content").asText(""));
        }
        assertThat(text.toString()).isEqualTo(marker(text.toString()) + REST);
        assertThat(last.get("done").asBoolean()).isTrue();
        assertThat(last.get("eval_count").asInt()).isEqualTo(8);
        assertThat(continued()).isEqualTo(1);
    }

    @Test
    void anAnthropicMessageGoesOnInTheClientsOpenTextBlock() throws Exception {
        String sse = post("/v1/messages", "{\"model\":\"" + MODEL + "\",\"stream\":true,\"max_tokens\":100,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"Say hello\"}]}");

        StringBuilder text = new StringBuilder();
        List<String> types = new ArrayList<>();
        int outputTokens = -1;
        for (String e : sse.split("\n\n")) {
            String data = e.substring(e.indexOf("data: ") + 6);
            JsonNode o = JSON.readTree(data);
            types.add(o.get("type").asText());
            assertThat(e).startsWith("event: " + o.get("type").asText() + "\n");
            if (o.has("index")) {
                assertThat(o.get("index").asInt()).as("one text block, index 0").isZero();
            }
            text.append(o.path("delta").path("text").asText(""));
            if (o.path("usage").has("output_tokens") && o.get("type").asText().equals("message_delta")) {
                outputTokens = o.get("usage").get("output_tokens").asInt();
            }
        }
        assertThat(text.toString()).isEqualTo(marker(text.toString()) + REST);
        assertThat(types.stream().filter(t -> t.equals("message_start")).count()).isEqualTo(1);
        assertThat(types.stream().filter(t -> t.equals("content_block_start")).count()).isEqualTo(1);
        assertThat(types.stream().filter(t -> t.equals("message_stop")).count()).isEqualTo(1);
        assertThat(types.get(types.size() - 1)).isEqualTo("message_stop");
        assertThat(outputTokens).isEqualTo(8);
        assertThat(continued()).isEqualTo(1);
    }

    @Test
    void theOfficialClientsReadMigratedStreamsWithoutError(@TempDir Path dir) throws Exception {
        NodeClients.install(dir);

        NodeClients.Run run = NodeClients.migrated(dir, "http://127.0.0.1:" + proxy.port(), MODEL);

        assertThat(run.status()).as(run.output()).isZero();
        JsonNode openai = JSON.readTree(run.output().lines().filter(l -> l.startsWith("OPENAI ")).findFirst()
                .orElseThrow().substring(7));
        assertThat(openai.get("text").asText()).endsWith("]" + REST);
        assertThat(openai.get("ids")).hasSize(1);
        JsonNode ollama = JSON.readTree(run.output().lines().filter(l -> l.startsWith("OLLAMA ")).findFirst()
                .orElseThrow().substring(7));
        assertThat(ollama.get("text").asText()).endsWith("]" + REST);
        assertThat(ollama.get("done").asBoolean()).isTrue();
        JsonNode chat = JSON.readTree(run.output().lines().filter(l -> l.startsWith("OLLAMA_CHAT ")).findFirst()
                .orElseThrow().substring(12));
        assertThat(chat.get("text").asText()).endsWith("]" + REST);
        assertThat(chat.get("done").asBoolean()).isTrue();
        assertThat(continued()).isEqualTo(3);
    }
}
