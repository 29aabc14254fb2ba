package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-key limits and usage accounting end to end: sims that report usage as vLLM and Ollama do,
 * real heartbeats over Kafka, a scheduler with a keys file and {@code --force-usage}.
 */
@ExtendWith(KafkaExtension.class)
class UsageIT {

    private static final String LIMITED = "hg-limited-0123456789";
    private static final String COUNTED = "hg-counted-0123456789";
    private static final String FRUGAL = "hg-frugal-0123456789";
    private static final List<String> SIMS = List.of("gpu-a", "gpu-b");

    @TempDir
    Path dir;

    private Cluster cluster;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        cluster = new Cluster(kafka.bootstrapServers());
        Path keys = Files.writeString(dir.resolve("api-keys"), "limited " + ApiKeys.hash(LIMITED) + " rpm=3\n"
                + "counted " + ApiKeys.hash(COUNTED) + "\n"
                + "frugal " + ApiKeys.hash(FRUGAL) + " tpm=20\n");
        for (String id : SIMS) {
            Cluster.SimNode sim = cluster.sim(id, c -> c.timing(6, Duration.ofMillis(1), Duration.ofMillis(1)));
            cluster.heartbeat(id, sim.url(), b -> b.models(List.of("llama3:8b", "qwen2.5:7b")));
        }
        cluster.startScheduler(c -> c.security(new SecurityConfig(keys, null, null, false, null, null, null, null, null))
                .proxy(p -> p.forceUsage(true)));
        cluster.awaitRoutable(2);
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
    }

    private HttpResponse<String> post(String key, String path, String body) throws Exception {
        return cluster.http.send(HttpRequest.newBuilder(cluster.proxy(path)).timeout(Duration.ofSeconds(30))
                .header("authorization", "Bearer " + key).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String chat(String model, boolean stream, String extra) {
        return "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"how many tokens is this\"}],"
                + "\"stream\":" + stream + extra + "}";
    }

    @Test
    void aKeyOverItsRequestRateGets429WithTheOpenAiHeaders() throws Exception {
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> ok = post(LIMITED, "/v1/chat/completions", chat("llama3:8b", false, ""));
            assertThat(ok.statusCode()).isEqualTo(200);
            assertThat(ok.headers().firstValue("x-ratelimit-limit-requests")).hasValue("3");
            assertThat(ok.headers().firstValue("x-ratelimit-remaining-requests")).hasValue(Integer.toString(2 - i));
            assertThat(ok.headers().firstValue("x-ratelimit-reset-requests")).isPresent();
        }
        HttpResponse<String> refused = post(LIMITED, "/v1/chat/completions", chat("llama3:8b", false, ""));
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(new JsonObject(refused.body()).getJsonObject("error").getString("type")).isEqualTo("rate_limit_exceeded");
        assertThat(refused.headers().firstValue("retry-after").map(Integer::parseInt).orElseThrow()).isBetween(1, 20);
        assertThat(refused.headers().firstValue("x-ratelimit-remaining-requests")).hasValue("0");
        // Another key is not held back by this one's limit.
        assertThat(post(COUNTED, "/v1/chat/completions", chat("llama3:8b", false, "")).statusCode()).isEqualTo(200);
        // No node saw the refused request.
        long completed = 0;
        for (String id : SIMS) {
            completed += cluster.simStats(id).getLong("completed");
        }
        assertThat(completed).isEqualTo(4);
        assertThat(metric("heartgate_key_requests_total{key=\"limited\",model=\"none\",status=\"429\"}")).isEqualTo(1.0);
    }

    @Test
    void tokensCountedPerKeyMatchTheSimsOwnCountsStreamedOrNotInBothFormats() throws Exception {
        // Path, body, and for an OpenAI stream whether its client gets the usage chunk.
        List<String[]> requests = List.of(
                new String[] {"/v1/chat/completions", chat("llama3:8b", false, "")},
                new String[] {"/v1/chat/completions", chat("qwen2.5:7b", true, ",\"stream_options\":{\"include_usage\":true}"),
                    "seen"},
                // --force-usage asks for the chunk; the client did not, so it never sees it.
                new String[] {"/v1/chat/completions", chat("llama3:8b", true, ""), "kept"},
                new String[] {"/v1/chat/completions", chat("llama3:8b", true, ",\"stream_options\":{\"include_usage\":false}"),
                    "kept"},
                // vLLM (and the sim) send it for stream_options without include_usage; OpenAI and the
                // other servers do not, so the client did not ask.
                new String[] {"/v1/chat/completions", chat("llama3:8b", true, ",\"stream_options\":{}"), "kept"},
                // Streamed: the node reads the last "stream", as the proxy must for the chunk to be asked.
                new String[] {"/v1/chat/completions", chat("llama3:8b", false, ",\"stream\":true"), "kept"},
                new String[] {"/v1/completions", "{\"model\":\"llama3:8b\",\"prompt\":\"once upon a time\",\"stream\":true}",
                    "kept"},
                new String[] {"/v1/completions", "{\"model\":\"qwen2.5:7b\",\"prompt\":\"once upon a time\"}"},
                new String[] {"/api/chat", chat("llama3:8b", true, "")},
                new String[] {"/api/chat", chat("qwen2.5:7b", false, "")},
                new String[] {"/api/generate", "{\"model\":\"llama3:8b\",\"prompt\":\"why is the sky blue\"}"},
                new String[] {"/api/generate", "{\"model\":\"llama3:8b\",\"prompt\":\"why is the sky blue\",\"stream\":false}"});
        for (String[] r : requests) {
            HttpResponse<String> answer = post(COUNTED, r[0], r[1]);
            assertThat(answer.statusCode()).as(r[0] + " " + r[1]).isEqualTo(200);
            if (r.length > 2) {
                String body = answer.body();
                assertThat(body).as(r[1]).endsWith("data: [DONE]\n\n").doesNotContain("\n\n\n");
                assertThat(body.split("\n\n")).as(r[1]).allMatch(e -> e.startsWith("data: {\"id\"") || e.equals("data: [DONE]"))
                        .filteredOn(e -> e.contains("\"choices\":[]")).hasSize(r[2].equals("seen") ? 1 : 0);
                if (r[2].equals("seen")) {
                    assertThat(body).as("the stream ends with its usage chunk").contains("\"choices\":[],\"usage\":{\"prompt_tokens\"");
                } else {
                    assertThat(body).as("the proxy's usage chunk is kept from the client").doesNotContain("\"usage\"");
                }
            }
        }
        long prompt = 0;
        long completion = 0;
        for (String id : SIMS) {
            JsonObject usage = cluster.simStats(id).getJsonObject("usage");
            prompt += usage.getLong("promptTokens");
            completion += usage.getLong("completionTokens");
        }
        assertThat(completion).as("six tokens per answer").isEqualTo(6L * requests.size());
        JsonObject counted = key("counted");
        assertThat(counted.getLong("promptTokens")).isEqualTo(prompt);
        assertThat(counted.getLong("completionTokens")).isEqualTo(completion);
        assertThat(counted.getLong("requests")).isEqualTo(requests.size());
        double promptMetric = metric("heartgate_tokens_total{key=\"counted\",model=\"llama3:8b\",type=\"prompt\"}")
                + metric("heartgate_tokens_total{key=\"counted\",model=\"qwen2.5:7b\",type=\"prompt\"}");
        assertThat(promptMetric).isEqualTo((double) prompt);
        assertThat(metric("heartgate_tokens_total{key=\"counted\",model=\"qwen2.5:7b\",type=\"completion\"}"))
                .isEqualTo(18.0);
        assertThat(metric("heartgate_key_requests_total{key=\"counted\",model=\"llama3:8b\",status=\"200\"}")).isEqualTo(9.0);
    }

    @Test
    void tokensUsedCountAgainstTheKeysTokensPerMinute() throws Exception {
        // 20 tokens a minute: the first answer (its prompt and six completion tokens) leaves the bucket near empty.
        assertThat(post(FRUGAL, "/v1/chat/completions", chat("llama3:8b", false, "")).statusCode()).isEqualTo(200);
        assertThat(post(FRUGAL, "/v1/chat/completions", chat("llama3:8b", false, "")).statusCode()).isEqualTo(200);
        HttpResponse<String> refused = post(FRUGAL, "/v1/chat/completions", chat("llama3:8b", false, ""));
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.body()).contains("20 tokens per minute");
        assertThat(refused.headers().firstValue("x-ratelimit-limit-tokens")).hasValue("20");
        assertThat(refused.headers().firstValue("x-ratelimit-remaining-tokens")).hasValue("0");
        assertThat(refused.headers().firstValue("retry-after")).isPresent();
    }

    private JsonObject key(String name) throws Exception {
        for (Object o : cluster.admin("/admin/keys").getJsonArray("keys")) {
            JsonObject k = (JsonObject) o;
            if (k.getString("key").equals(name)) {
                return k;
            }
        }
        throw new AssertionError("no key " + name + " in /admin/keys");
    }

    private double metric(String series) throws Exception {
        String text = cluster.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + cluster.scheduler.adminPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
        for (String line : text.split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        return 0.0;
    }
}
