package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonObject;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm first through a real broker, real agents and simulated Ollama nodes that each hold one model in
 * memory and take 300 ms to load another: under round robin, requests for a model that arrive while a
 * node loads it queue there, each cold model goes to a node holding none, once a node has answered the
 * first request for a model every later request for it goes to that node, and no model loads twice.
 */
@ExtendWith(KafkaExtension.class)
class WarmFirstIT {

    private static final List<String> MODELS = List.of("llama3:8b", "qwen2.5:7b", "mistral:7b");
    private static final List<String> NODES = List.of("gpu-a", "gpu-b", "gpu-c");

    @TempDir
    Path dir;

    private Cluster cluster;
    private AgentProcesses agents;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        Assumptions.assumeTrue(AgentProcesses.packaged(), "the packaged agent (mvn verify builds it before the scheduler)");
        cluster = new Cluster(kafka.bootstrapServers());
        agents = new AgentProcesses(kafka.bootstrapServers(), cluster.topic, dir);
        for (String id : NODES) {
            agents.start(id, cluster.sim(id, MODELS, c -> c.loading(1, Duration.ofMillis(300))).url());
        }
        cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN));
        await().atMost(Duration.ofSeconds(30)).until(() -> cluster.scheduler.table().snapshot().routable().size() == 3);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (agents != null) {
            agents.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    private String chat(String model) throws Exception {
        HttpResponse<String> r = cluster.post("/api/chat", "{\"model\":\"" + model
                + "\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return r.headers().firstValue("x-upstream-node").orElseThrow();
    }

    private CompletableFuture<HttpResponse<String>> chatAsync(String model) {
        return cluster.http.sendAsync(HttpRequest.newBuilder(cluster.proxy("/api/chat"))
                .timeout(Duration.ofSeconds(30)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + model
                        + "\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private int loading(String model) {
        int n = 0;
        for (Node node : cluster.scheduler.table().snapshot().nodes()) {
            n += node.inFlight().loading(ModelNames.normalize(model));
        }
        return n;
    }

    @Test
    void afterTheFirstRequestForAModelItsRequestsGoToTheNodeThatLoadedIt() throws Exception {
        // Requests arriving while a node loads the model queue behind that one load: 5 is within the
        // cap of 4 more in flight than the idle cold nodes.
        List<CompletableFuture<HttpResponse<String>>> burst = new ArrayList<>();
        burst.add(chatAsync("llama3:8b"));
        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5)).until(() -> loading("llama3:8b") == 1);
        for (int i = 0; i < 4; i++) {
            burst.add(chatAsync("llama3:8b"));
        }
        Set<String> burstNodes = new HashSet<>();
        for (CompletableFuture<HttpResponse<String>> f : burst) {
            HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            burstNodes.add(r.headers().firstValue("x-upstream-node").orElseThrow());
        }
        assertThat(burstNodes).as("five concurrent requests for a cold model, one node").hasSize(1);

        Map<String, String> loadedBy = new HashMap<>();
        loadedBy.put("llama3:8b", burstNodes.iterator().next());
        for (String model : MODELS.subList(1, MODELS.size())) {
            loadedBy.put(model, chat(model));
        }
        assertThat(new HashSet<>(loadedBy.values())).as("each cold model to a node holding none").hasSize(3);

        for (int round = 0; round < 4; round++) {
            for (String model : MODELS) { // twice in a row: round robin alone would move each second one on
                assertThat(chat(model)).as("round %d, %s", round, model).isEqualTo(loadedBy.get(model));
                assertThat(chat(model)).as("round %d, %s again", round, model).isEqualTo(loadedBy.get(model));
            }
        }

        long loads = 0;
        for (String id : NODES) {
            JsonObject stats = cluster.simStats(id);
            loads += stats.getLong("modelLoads");
            assertThat(stats.getJsonArray("loaded").getList()).hasSize(1);
        }
        assertThat(loads).as("one load per model, in 31 requests").isEqualTo(3);
        assertThat(MODELS).allSatisfy(m -> assertThat(loading(m)).as("requests counted as loading, all ended").isZero());
        // By now the heartbeats say so too: the table, not only this scheduler's answers, shows each model warm.
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            for (String model : MODELS) {
                assertThat(cluster.scheduler.table().snapshot().node(loadedBy.get(model)).loaded()).containsExactly(model);
            }
        });
    }
}
