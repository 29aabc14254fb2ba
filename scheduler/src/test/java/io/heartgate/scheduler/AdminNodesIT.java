package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.NodeState;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The admin port's node listing at a size where one document is no longer the way: 1,205 nodes
 * heard through a real broker, listed by filters and pages ({@code /admin/nodes?limit=&cursor=}),
 * streamed whole, and counted ({@code /admin/summary}).
 */
@ExtendWith(KafkaExtension.class)
class AdminNodesIT {

    private static final int GPUS = 1200;
    private Cluster cluster;

    @BeforeEach
    void setUp(TestKafka kafka) {
        cluster = new Cluster(kafka.bootstrapServers());
        for (int i = 0; i < GPUS; i++) {
            String id = String.format("gpu-%04d", i);
            int n = i;
            // Nothing is sent to these addresses: the test only lists the nodes.
            cluster.heartbeat(id, "http://127.0.1." + (1 + i / 250) + ":" + (20000 + i % 250), b -> b.intervalMs(60_000)
                    .models(List.of(n % 2 == 0 ? "llama3:8b" : "qwen2.5:7b")).backend(n % 3 == 0 ? "vllm" : "ollama"));
            cluster.stopHeartbeats(id); // one heartbeat each: they stay for three minutes
        }
        for (int i = 0; i < 5; i++) {
            String id = "cpu-" + i;
            cluster.heartbeat(id, "http://127.0.2.1:" + (21000 + i), b -> b.intervalMs(60_000).state(NodeState.DOWN)
                    .models(List.of("llama3:8b")).backend("llama.cpp"));
            cluster.stopHeartbeats(id);
        }
        cluster.startScheduler(c -> { });
        Awaitility.await().until(() -> cluster.scheduler.table().snapshot().nodes().size() == GPUS + 5);
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
    }

    private HttpResponse<String> admin(String pathAndQuery) throws Exception {
        return cluster.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.scheduler.adminPort()
                + pathAndQuery)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private List<String> ids(JsonArray nodes) {
        List<String> ids = new ArrayList<>();
        nodes.forEach(n -> ids.add(((JsonObject) n).getString("nodeId")));
        return ids;
    }

    @Test
    void summaryCountsTheFleet() throws Exception {
        JsonObject s = new JsonObject(admin("/admin/summary").body());
        assertThat(s.getInteger("nodes")).isEqualTo(1205);
        assertThat(s.getInteger("routable")).isEqualTo(1200);
        assertThat(s.getJsonObject("byState").getMap()).containsEntry("UP", 1200).containsEntry("DOWN", 5);
        assertThat(s.getJsonObject("byModel").getMap()).containsEntry("llama3:8b", 605).containsEntry("qwen2.5:7b", 600);
        assertThat(s.getJsonObject("byBackend").getMap()).containsEntry("vllm", 400).containsEntry("ollama", 800)
                .containsEntry("llama.cpp", 5);
    }

    @Test
    void pagesFollowTheirCursorsToTheLastWhichHasNone() throws Exception {
        List<String> seen = new ArrayList<>();
        List<Integer> sizes = new ArrayList<>();
        String next = "/admin/nodes?limit=500";
        for (int i = 0; i < 10 && next != null; i++) {
            HttpResponse<String> r = admin(next);
            assertThat(r.statusCode()).isEqualTo(200);
            JsonObject page = new JsonObject(r.body());
            assertThat(page.fieldNames()).isSubsetOf("nodes", "cursor");
            seen.addAll(ids(page.getJsonArray("nodes")));
            sizes.add(page.getJsonArray("nodes").size());
            next = page.containsKey("cursor") ? "/admin/nodes?limit=500&cursor=" + page.getString("cursor") : null;
        }
        assertThat(sizes).containsExactly(500, 500, 205);
        assertThat(seen).doesNotHaveDuplicates().hasSize(1205).isSorted();
    }

    @Test
    void filtersCombine() throws Exception {
        JsonObject llama = new JsonObject(admin("/admin/nodes?model=llama3:8b&routable=true&limit=10000").body());
        assertThat(llama.getJsonArray("nodes")).hasSize(600);
        assertThat(llama.containsKey("cursor")).isFalse();
        JsonObject down = new JsonObject(admin("/admin/nodes?state=down&limit=3").body());
        assertThat(ids(down.getJsonArray("nodes"))).containsExactly("cpu-0", "cpu-1", "cpu-2");
        JsonObject rest = new JsonObject(admin("/admin/nodes?state=down&limit=3&cursor=" + down.getString("cursor")).body());
        assertThat(ids(rest.getJsonArray("nodes"))).containsExactly("cpu-3", "cpu-4");
        assertThat(rest.containsKey("cursor")).isFalse();
        JsonObject prefixed = new JsonObject(admin("/admin/nodes?prefix=gpu-11").body());
        assertThat(ids(prefixed.getJsonArray("nodes"))).hasSize(100).allMatch(id -> id.startsWith("gpu-11"));
    }

    @Test
    void anOffsetPageCountsEveryMatchingNode() throws Exception {
        JsonObject page = new JsonObject(admin("/admin/nodes?limit=4&offset=2&state=down").body());
        assertThat(ids(page.getJsonArray("nodes"))).containsExactly("cpu-2", "cpu-3", "cpu-4");
        assertThat(page.getInteger("total")).isEqualTo(5);
        assertThat(page.containsKey("cursor")).isFalse();
        JsonObject far = new JsonObject(admin("/admin/nodes?limit=10&offset=1200").body());
        assertThat(ids(far.getJsonArray("nodes"))).hasSize(5);
        assertThat(far.getInteger("total")).isEqualTo(1205);
        assertThat(far.getJsonArray("nodes").getJsonObject(0).getLong("requests")).isZero();
    }

    @Test
    void theWholeListingIsStreamedWithEveryNode() throws Exception {
        HttpResponse<String> r = admin("/admin/nodes");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("transfer-encoding")).hasValue("chunked");
        JsonObject all = new JsonObject(r.body());
        assertThat(all.getString("strategy")).isNotBlank();
        assertThat(ids(all.getJsonArray("nodes"))).hasSize(1205).doesNotHaveDuplicates().isSorted();
        JsonObject first = all.getJsonArray("nodes").getJsonObject(0);
        assertThat(first.getString("nodeId")).isEqualTo("cpu-0");
        assertThat(first.getBoolean("routable")).isFalse();
        assertThat(first.getString("notRoutableReason")).isEqualTo("state DOWN");
    }

    @Test
    void aBadParameterIsA400NamingIt() throws Exception {
        for (String q : List.of("limit=0", "limit=x", "state=BUSY", "routable=maybe", "limit=5&cursor=%21%21", "cursor=Z3B1",
                "offset=3", "offset=-2&limit=5")) {
            HttpResponse<String> r = admin("/admin/nodes?" + q);
            assertThat(r.statusCode()).as(q).isEqualTo(400);
            assertThat(new JsonObject(r.body()).getString("error")).as(q).startsWith(q.contains("cursor") ? "cursor:"
                    : q.substring(0, q.indexOf('=')) + ":");
        }
    }
}
