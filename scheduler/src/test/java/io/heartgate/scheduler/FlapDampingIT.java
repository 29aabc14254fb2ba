package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.config.ResilienceConfig;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A node whose heartbeats flip between UP and DOWN through a real broker is held out of routing
 * (requests go to the steady node), says why in /admin/nodes, and is released once steady.
 */
@ExtendWith(KafkaExtension.class)
class FlapDampingIT {

    private static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    private Cluster cluster;

    @BeforeEach
    void setUp(TestKafka kafka) {
        cluster = new Cluster(kafka.bootstrapServers());
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
    }

    private JsonObject adminNode(String id) throws Exception {
        JsonArray nodes = cluster.admin("/admin/nodes").getJsonArray("nodes");
        for (int i = 0; i < nodes.size(); i++) {
            if (id.equals(nodes.getJsonObject(i).getString("nodeId"))) {
                return nodes.getJsonObject(i);
            }
        }
        return null;
    }

    @Test
    void aFlappingNodeIsHeldAndReleasedOnceSteady() throws Exception {
        Cluster.SimNode steady = cluster.sim("gpu-steady", c -> c);
        Cluster.SimNode flappy = cluster.sim("gpu-flappy", c -> c);
        cluster.heartbeat("gpu-steady", steady.url(), b -> b.models(List.of("llama3:8b")));
        cluster.heartbeat("gpu-flappy", flappy.url(), b -> b.models(List.of("llama3:8b")));
        cluster.startScheduler(c -> c.resilience(new ResilienceConfig(2, Duration.ofSeconds(3), Duration.ZERO)));
        cluster.awaitRoutable(2);

        // Joined (1), DOWN (2), UP (3): more than 2 changes in 3 s.
        cluster.heartbeat("gpu-flappy", flappy.url(), b -> b.models(List.of("llama3:8b")).state(NodeState.DOWN));
        await().atMost(Duration.ofSeconds(5)).until(() ->
                cluster.scheduler.table().snapshot().node("gpu-flappy").state() == NodeState.DOWN);
        cluster.heartbeat("gpu-flappy", flappy.url(), b -> b.models(List.of("llama3:8b")).state(NodeState.UP));
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            JsonObject n = adminNode("gpu-flappy");
            return n != null && n.getString("notRoutableReason", "").startsWith("held: flapping");
        });
        JsonObject held = adminNode("gpu-flappy");
        assertThat(held.getString("state")).isEqualTo("UP");
        assertThat(held.getBoolean("routable")).isFalse();
        for (int i = 0; i < 10; i++) {
            HttpResponse<String> r = cluster.post("/v1/chat/completions", CHAT);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("x-upstream-node")).hasValue("gpu-steady");
        }

        // Steady for a window (3 s) and past its hold: it gets requests again.
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200))
                .until(() -> adminNode("gpu-flappy").getBoolean("routable"));
        await().atMost(Duration.ofSeconds(5)).until(() -> "gpu-flappy".equals(
                cluster.post("/v1/chat/completions", CHAT).headers().firstValue("x-upstream-node").orElse("")));
    }
}
