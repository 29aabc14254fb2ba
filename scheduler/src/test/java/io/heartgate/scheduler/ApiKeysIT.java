package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import io.heartgate.protocol.cli.KafkaAuthNoise;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.sim.NodeClients;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.LogCapture;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * API keys on the proxy port end to end: sims that, like vLLM with {@code --api-key}, refuse any
 * key but their own; a scheduler with a keys file and the nodes' key; real heartbeats over Kafka.
 */
@ExtendWith(KafkaExtension.class)
class ApiKeysIT {

    private static final String ALICE = "hg-alice-0123456789";
    private static final String BOB = "hg-bob-0123456789";
    private static final String NODE_KEY = "node-secret-42";
    /** A short answer (4 tokens); the sims' own answers are long (40 tokens, 8 s) for the revocation test. */
    private static final String CHAT =
            "{\"model\":\"llama3:8b\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    @TempDir
    Path dir;

    private Cluster cluster;
    private Path keysFile;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        cluster = new Cluster(kafka.bootstrapServers());
        keysFile = Files.writeString(dir.resolve("api-keys"), "# callers\n"
                + "alice " + ApiKeys.hash(ALICE) + "\n"
                + "bob " + ApiKeys.hash(BOB) + " models=qwen2.5:7b\n");
        Path nodeKey = Files.writeString(dir.resolve("node-key"), NODE_KEY + "\n");
        for (String id : List.of("gpu-a", "gpu-b")) {
            Cluster.SimNode sim = cluster.sim(id, c -> c.apiKey(NODE_KEY)
                    .timing(40, Duration.ofMillis(200), Duration.ofMillis(1)));
            cluster.heartbeat(id, sim.url(), b -> b.models(List.of("llama3:8b", "qwen2.5:7b")));
        }
        cluster.startScheduler(c -> c.security(new SecurityConfig(keysFile, nodeKey, null, false, null, null, null, null, null)));
        cluster.awaitRoutable(2);
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
    }

    private HttpResponse<String> post(String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(cluster.proxy("/v1/chat/completions"))
                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("authorization", "Bearer " + key);
        }
        return cluster.http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String type(HttpResponse<String> r) {
        return new JsonObject(r.body()).getJsonObject("error").getString("type");
    }

    @Test
    void onlyKeysOfTheFileGetThroughAndTheNodesGetTheirOwnKey() throws Exception {
        HttpResponse<String> none = post(null, CHAT);
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(type(none)).isEqualTo("invalid_api_key");
        HttpResponse<String> wrong = post("hg-guess", CHAT);
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(type(wrong)).isEqualTo("invalid_api_key");

        // The sims refuse anything but their own key: a 200 means they got it, and not the caller's.
        assertThat(post(ALICE, CHAT).statusCode()).isEqualTo(200);
        HttpResponse<String> viaXApiKey = cluster.http.send(HttpRequest.newBuilder(cluster.proxy("/v1/chat/completions"))
                .header("x-api-key", ALICE).POST(HttpRequest.BodyPublishers.ofString(CHAT)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(viaXApiKey.statusCode()).isEqualTo(200);

        HttpResponse<String> otherModel = post(BOB, CHAT);
        assertThat(otherModel.statusCode()).isEqualTo(403);
        assertThat(type(otherModel)).isEqualTo("model_not_allowed");
        assertThat(new JsonObject(otherModel.body()).getJsonObject("error").getString("message"))
                .isEqualTo("API key 'bob' may not use model 'llama3:8b'");
        assertThat(post(BOB, CHAT.replace("llama3:8b", "qwen2.5:7b")).statusCode()).isEqualTo(200);

        for (String id : cluster.sims.keySet()) {
            assertThat(cluster.simStats(id).getLong("unauthorized")).as(id).isZero();
        }
        String metrics = cluster.http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + cluster.scheduler.adminPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        assertThat(metrics).contains("heartgate_proxy_key_requests_total{key=\"alice\",status_class=\"2xx\"} 2.0")
                .contains("heartgate_proxy_key_requests_total{key=\"bob\",status_class=\"4xx\"} 1.0")
                .contains("heartgate_proxy_errors_total{type=\"invalid_api_key\"} 2.0")
                .doesNotContain(ALICE).doesNotContain(BOB);
    }

    @Test
    void aKeyRevokedWhileItsStreamRunsLetsTheStreamFinishAndRefusesTheNextRequest() throws Exception {
        HttpResponse<InputStream> stream = longStream(ALICE);
        assertThat(stream.statusCode()).isEqualTo(200);
        // Lines with the time they were read, by a reader of their own, so "after the 401" means after.
        List<Map.Entry<Long, String>> lines = new CopyOnWriteArrayList<>();
        BufferedReader reader = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8));
        CompletableFuture<Void> reading = CompletableFuture.runAsync(() -> {
            try (reader) {
                for (String line; (line = reader.readLine()) != null; ) {
                    lines.add(Map.entry(System.nanoTime(), line));
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        await().atMost(Duration.ofSeconds(5)).until(() -> !lines.isEmpty()); // the stream is running

        Files.writeString(keysFile, "bob " + ApiKeys.hash(BOB) + " models=qwen2.5:7b\n");
        // The catalogue answers at once, so each poll is a fresh request with alice's key.
        await().atMost(Duration.ofSeconds(6)).pollInterval(Duration.ofMillis(50))
                .until(() -> catalogue(ALICE).statusCode() == 401);
        long refusedAt = System.nanoTime();
        reading.get(30, TimeUnit.SECONDS);

        // The stream (40 tokens, 200 ms apart) still sent tokens after alice's next request got 401,
        // and went on to its end.
        assertThat(lines.stream().filter(l -> l.getKey() > refusedAt && l.getValue().startsWith("data: {")))
                .as("tokens read after the revocation took effect").isNotEmpty();
        assertThat(lines.stream().map(Map.Entry::getValue)).contains("data: [DONE]");
        HttpResponse<String> refused = post(ALICE, CHAT);
        assertThat(refused.statusCode()).isEqualTo(401);
        assertThat(type(refused)).isEqualTo("invalid_api_key");
        assertThat(post(BOB, CHAT.replace("llama3:8b", "qwen2.5:7b")).statusCode()).isEqualTo(200);
    }

    @Test
    void theCallersKeyNameIsOnTheLinesLoggedAboutItsRequestsAndTheKeyNever() throws Exception {
        // Every proxy logger at DEBUG: the stages' lines about a request as well as the exchange's.
        ch.qos.logback.classic.Logger failures = (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(
                "io.heartgate.scheduler.proxy");
        Level before = failures.getLevel();
        failures.setLevel(Level.DEBUG);
        try (LogCapture logs = new LogCapture(new KafkaAuthNoise())) {
            HttpResponse<InputStream> stream = longStream(ALICE);
            try (InputStream body = stream.body()) {
                assertThat(body.read()).isNotEqualTo(-1); // streaming; now alice hangs up
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> logs.events().stream()
                    .anyMatch(e -> e.getFormattedMessage().contains("(key alice) hung up")));
            assertThat(logs.anyContains(ALICE)).as("the key itself is never logged").isFalse();
        } finally {
            failures.setLevel(before);
        }
    }

    /** Starts a streamed chat of the sims' full answer (40 tokens, 8 s) with {@code key}. */
    private HttpResponse<InputStream> longStream(String key) throws Exception {
        String body = CHAT.replace("\"max_tokens\":4,", "").replace("\"messages\"", "\"stream\":true,\"messages\"");
        return cluster.http.send(HttpRequest.newBuilder(cluster.proxy("/v1/chat/completions"))
                .header("authorization", "Bearer " + key)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofInputStream());
    }

    private HttpResponse<String> catalogue(String key) throws Exception {
        return cluster.http.send(HttpRequest.newBuilder(cluster.proxy("/v1/models"))
                .header("authorization", "Bearer " + key).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theOfficialClientsStreamThroughWithAKey() throws Exception {
        Path clients = Files.createDirectory(dir.resolve("clients"));
        NodeClients.install(clients);
        NodeClients.Run run = NodeClients.chat(clients, "http://127.0.0.1:" + cluster.scheduler.proxyPort(),
                "llama3:8b", ALICE);
        assertThat(run.status()).as(run.output()).isZero();
        assertThat(run.output()).containsPattern("OPENAI \"\\[gpu-[ab]\\] the GPU streams");
        assertThat(run.output()).containsPattern("OLLAMA \"\\[gpu-[ab]\\] the GPU streams");

        NodeClients.Run refused = NodeClients.chat(clients, "http://127.0.0.1:" + cluster.scheduler.proxyPort(),
                "llama3:8b", "hg-not-a-key");
        assertThat(refused.status()).isNotZero();
        assertThat(refused.output()).contains("401");
    }
}
