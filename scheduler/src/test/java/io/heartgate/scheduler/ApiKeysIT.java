package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.sim.NodeClients;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * API keys on the proxy port end to end: sims that, like vLLM with {@code --api-key}, refuse any
 * key but their own; a scheduler with a keys file and the nodes' key; real heartbeats over Kafka.
 */
@ExtendWith(KafkaExtension.class)
class ApiKeysIT {

    private static final String ALICE = "hg-alice-0123456789";
    private static final String BOB = "hg-bob-0123456789";
    private static final String NODE_KEY = "node-secret-42";
    private static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

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
                    .timing(4, Duration.ofMillis(250), Duration.ofMillis(1)));
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
                java.net.URI.create("http://127.0.0.1:" + cluster.scheduler.adminPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        assertThat(metrics).contains("heartgate_proxy_key_requests_total{key=\"alice\",status_class=\"2xx\"} 2.0")
                .contains("heartgate_proxy_key_requests_total{key=\"bob\",status_class=\"4xx\"} 1.0")
                .contains("heartgate_proxy_errors_total{type=\"invalid_api_key\"} 2.0")
                .doesNotContain(ALICE).doesNotContain(BOB);
    }

    @Test
    void aKeyRevokedWhileItsStreamRunsLetsTheStreamFinishAndRefusesTheNextRequest() throws Exception {
        HttpResponse<InputStream> stream = cluster.http.send(HttpRequest.newBuilder(cluster.proxy("/v1/chat/completions"))
                .header("authorization", "Bearer " + ALICE)
                .POST(HttpRequest.BodyPublishers.ofString(CHAT.replace("\"messages\"", "\"stream\":true,\"messages\"")))
                .build(), HttpResponse.BodyHandlers.ofInputStream());
        assertThat(stream.statusCode()).isEqualTo(200);
        List<String> lines = new ArrayList<>();
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
            lines.add(reader.readLine()); // the first token is here: the stream is running

            Files.writeString(keysFile, "bob " + ApiKeys.hash(BOB) + " models=qwen2.5:7b\n");
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100))
                    .until(() -> post(ALICE, CHAT).statusCode() == 401);

            String line;
            while ((line = reader.readLine()) != null) {
                lines.add(line);
            }
        }
        assertThat(lines).contains("data: [DONE]");
        assertThat(post(BOB, CHAT.replace("llama3:8b", "qwen2.5:7b")).statusCode()).isEqualTo(200);
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
