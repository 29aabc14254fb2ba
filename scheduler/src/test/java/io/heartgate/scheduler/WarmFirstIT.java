package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm first through a real broker, real agents and simulated Ollama nodes that each hold one model in
 * memory and take 300 ms to load another: under round robin, once a node has answered the first
 * request for a model, every later request for it goes to that node, and no node loads a model twice.
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

    @Test
    void afterTheFirstRequestForAModelItsRequestsGoToTheNodeThatLoadedIt() throws Exception {
        Map<String, String> loadedBy = new HashMap<>();
        for (String model : MODELS) {
            loadedBy.put(model, chat(model));
        }
        assertThat(new HashSet<>(loadedBy.values())).as("round robin over three cold nodes").hasSize(3);

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
        assertThat(loads).as("one load per model, in 27 requests").isEqualTo(3);
        // By now the heartbeats say so too: the table, not only this scheduler's answers, shows each model warm.
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            for (String model : MODELS) {
                assertThat(cluster.scheduler.table().snapshot().node(loadedBy.get(model)).loaded()).containsExactly(model);
            }
        });
    }
}
