package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Through a real broker and simulated nodes (gpu-a lists llama3:8b, gpu-b qwen2.5:7b): every
 * endpoint that names a model reaches a node that serves it, whatever the node then answers, and
 * Ollama's model-management calls get 405 {@code management_disabled} by default.
 */
@ExtendWith(KafkaExtension.class)
class ModelRoutingIT {

    private static final List<String> ENDPOINTS = List.of("/v1/chat/completions", "/v1/completions", "/v1/embeddings",
            "/v1/responses", "/v1/audio/speech", "/v1/messages", "/rerank", "/v1/rerank", "/api/generate", "/api/chat",
            "/api/embed", "/api/embeddings", "/api/show");

    private Cluster cluster;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        cluster = new Cluster(kafka.bootstrapServers());
        Cluster.SimNode a = cluster.sim("gpu-a", c -> c);
        Cluster.SimNode b = cluster.sim("gpu-b", c -> c);
        cluster.heartbeat("gpu-a", a.url(), h -> h.models(List.of("llama3:8b")));
        cluster.heartbeat("gpu-b", b.url(), h -> h.models(List.of("qwen2.5:7b")));
        cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN));
        cluster.awaitRoutable(2);
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
    }

    private HttpResponse<String> post(String path, String body) throws Exception {
        return cluster.http.send(HttpRequest.newBuilder(cluster.proxy(path)).timeout(Duration.ofSeconds(30))
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void everyEndpointThatNamesAModelReachesANodeServingIt() throws Exception {
        for (String path : ENDPOINTS) {
            for (int i = 0; i < 2; i++) { // round robin alternates between the two nodes
                HttpResponse<String> r = post(path, "{\"model\":\"qwen2.5:7b\",\"stream\":false,\"prompt\":\"hi\","
                        + "\"input\":\"hi\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
                assertThat(r.headers().firstValue("x-upstream-node")).as(path).contains("gpu-b");
            }
            HttpResponse<String> none = post(path, "{\"model\":\"mistral:7b\"}");
            assertThat(none.statusCode()).as(path).isEqualTo(404);
            assertThat(none.body()).contains("model_not_found");
        }
    }

    @Test
    void modelManagementIsRefusedByDefault() throws Exception {
        for (String path : List.of("/api/pull", "/api/delete", "/api/create", "/api/copy", "/api/push")) {
            HttpResponse<String> r = post(path, "{\"model\":\"llama3:8b\"}");
            assertThat(r.statusCode()).as(path).isEqualTo(405);
            assertThat(r.body()).contains("\"type\":\"management_disabled\"");
            assertThat(r.headers().firstValue("x-upstream-node")).isEmpty();
        }
    }
}
