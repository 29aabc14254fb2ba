package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.agent.AgentConfig;
import io.heartgate.agent.AgentRuntime;
import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.sim.Faults;
import io.heartgate.sim.NodeClients;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The proxy end to end: real broker, simulated nodes, heartbeats, scheduler. */
@ExtendWith(KafkaExtension.class)
class ProxyIT {

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

    private void threeNodes(int... weights) throws Exception {
        for (int i = 0; i < 3; i++) {
            String id = "gpu-" + (char) ('a' + i);
            Cluster.SimNode sim = cluster.sim(id, c -> c);
            int w = weights.length > i ? weights[i] : 1;
            cluster.heartbeat(id, sim.url(), b -> b.weight(w).models(List.of("llama3:8b", "qwen2.5:7b")));
        }
    }

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void spreadsRequestsPerStrategy(Strategy strategy) throws Exception {
        threeNodes(1, 2, 3);
        cluster.startScheduler(c -> c.strategy(strategy));
        cluster.awaitRoutable(3);

        Map<String, Integer> byHeader = new HashMap<>();
        for (int i = 0; i < 60; i++) {
            HttpResponse<String> r = cluster.post("/v1/chat/completions", CHAT);
            assertThat(r.statusCode()).isEqualTo(200);
            String node = r.headers().firstValue("x-upstream-node").orElseThrow();
            assertThat(r.body()).contains("[" + node + "]"); // the body says who answered
            byHeader.merge(node, 1, Integer::sum);
        }
        Map<String, Integer> bySim = new HashMap<>();
        for (String id : cluster.sims.keySet()) {
            int n = cluster.simStats(id).getJsonObject("requests").getInteger("openai.chat", 0);
            if (n > 0) {
                bySim.put(id, n);
            }
        }
        assertThat(bySim).isEqualTo(byHeader);
        switch (strategy) {
            case ROUND_ROBIN, LEAST_CONNECTIONS -> // sequential requests: every node has 0 in flight, ties rotate
                    assertThat(byHeader).containsExactlyInAnyOrderEntriesOf(Map.of("gpu-a", 20, "gpu-b", 20, "gpu-c", 20));
            case WEIGHTED -> assertThat(byHeader)
                    .containsExactlyInAnyOrderEntriesOf(Map.of("gpu-a", 10, "gpu-b", 20, "gpu-c", 30));
            case RANDOM -> assertThat(byHeader).hasSize(3);
            // Idle nodes score 1/weight and every candidate is compared: the heaviest idle node wins each time.
            case LEAST_LOADED -> assertThat(byHeader).containsExactlyInAnyOrderEntriesOf(Map.of("gpu-c", 60));
            // One prompt, one key: every request to its node, which is never busy between sequential requests.
            case AFFINITY -> assertThat(byHeader).hasSize(1).containsValue(60);
            default -> throw new AssertionError(strategy);
        }
    }

    @Test
    void streamsSseAndNdjsonTokenByToken() throws Exception {
        Cluster.SimNode sim = cluster.sim("gpu-s", c -> c.timing(5, Duration.ofMillis(200), Duration.ofMillis(1)));
        cluster.heartbeat("gpu-s", sim.url(), b -> b);
        cluster.startScheduler(c -> { });
        cluster.awaitRoutable(1);

        for (String[] call : new String[][] {
            {"/v1/chat/completions", "{\"model\":\"llama3:8b\",\"stream\":true,\"messages\":[]}", "text/event-stream"},
            {"/api/generate", "{\"model\":\"llama3:8b\",\"prompt\":\"hi\"}", "application/x-ndjson"}}) {
            HttpResponse<InputStream> r = cluster.http.send(HttpRequest.newBuilder(cluster.proxy(call[0]))
                    .POST(HttpRequest.BodyPublishers.ofString(call[1])).build(), HttpResponse.BodyHandlers.ofInputStream());
            assertThat(r.headers().firstValue("content-type")).hasValue(call[2]);
            assertThat(r.headers().firstValue("cache-control")).hasValue("no-cache");
            assertThat(r.headers().firstValue("x-accel-buffering")).hasValue("no");
            assertThat(r.headers().firstValue("x-upstream-node")).hasValue("gpu-s");
            List<Long> tokenArrivals = new ArrayList<>();
            try (BufferedReader reader = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = reader.readLine()) != null) {
                    boolean token = line.contains("\"content\":\"") && !line.contains("\"content\":\"\"")
                            || line.contains("\"response\":\"") && !line.contains("\"response\":\"\"");
                    if (token) {
                        tokenArrivals.add(System.nanoTime());
                    }
                }
            }
            assertThat(tokenArrivals).as(call[0]).hasSize(5);
            long firstToLastMs = (tokenArrivals.get(4) - tokenArrivals.get(0)) / 1_000_000;
            // The first token reached us while the sim still had four tokens (800 ms) to produce.
            assertThat(firstToLastMs).as(call[0]).isGreaterThanOrEqualTo(700);
        }
    }

    @Test
    void aClientDisconnectReachesTheNodeWithin100Ms() throws Exception {
        Cluster.SimNode sim = cluster.sim("gpu-d", c -> c.timing(10_000, Duration.ofMillis(20), Duration.ofMillis(1)));
        cluster.heartbeat("gpu-d", sim.url(), b -> b);
        cluster.startScheduler(c -> { });
        cluster.awaitRoutable(1);
        String body = "{\"model\":\"llama3:8b\",\"prompt\":\"hi\"}";

        try (Socket socket = new Socket("127.0.0.1", cluster.scheduler.proxyPort())) {
            socket.getOutputStream().write(("POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
            BufferedReader reader = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String line;
            int lines = 0;
            while ((line = reader.readLine()) != null && !line.contains("[gpu-d]") && lines++ < 1000) {
                // headers, then the first token
            }
        }
        long closed = System.nanoTime();
        await().atMost(Duration.ofMillis(100)).pollInterval(Duration.ofMillis(5))
                .until(() -> cluster.simStats("gpu-d").getLong("cancelledStreams") == 1);
        System.out.printf("[heartgate-test] the sim saw the client's disconnect %d ms later%n",
                (System.nanoTime() - closed) / 1_000_000);
        await().atMost(Duration.ofSeconds(2)).until(() -> cluster.scheduler.proxyCounters().get(Counter.CLIENT_CANCELLATIONS) == 1);
        assertThat(cluster.scheduler.health().isEjected("gpu-d")).as("a hang-up is not the node's failure").isFalse();
        assertThat(cluster.scheduler.table().snapshot().node("gpu-d").inFlight().get()).isZero();
    }

    @Test
    void aKilledNodeCostsNoFailedRequestWhileItsHeartbeatsAreFresh() throws Exception {
        threeNodes();
        cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN));
        cluster.awaitRoutable(3);

        cluster.kill("gpu-b"); // its "agent" keeps saying UP
        int failed = 0;
        for (int i = 0; i < 100; i++) {
            HttpResponse<String> r = cluster.post("/v1/chat/completions", CHAT);
            if (r.statusCode() != 200) {
                failed++;
            }
            assertThat(r.headers().firstValue("x-upstream-node")).isNotEqualTo(Optional.of("gpu-b"));
        }

        assertThat(failed).isZero();
        assertThat(cluster.scheduler.health().isEjected("gpu-b")).isTrue();
        assertThat(cluster.scheduler.proxyCounters().get(Counter.RETRIES)).isPositive();
        JsonObject b = node(cluster.admin("/admin/nodes"), "gpu-b");
        assertThat(b.getString("state")).isEqualTo("UP");
        assertThat(b.getBoolean("ejected")).isTrue();
        assertThat(b.getBoolean("routable")).isFalse();
    }

    @Test
    void ejectsANodeWhoseAdvertisedUrlIsUnreachableWhileItsAgentSeesItHealthy(TestKafka kafka) throws Exception {
        Cluster.SimNode good = cluster.sim("gpu-good", c -> c);
        cluster.heartbeat("gpu-good", good.url(), b -> b.capacity(8));
        Cluster.SimNode hidden = cluster.sim("gpu-hidden", c -> c);
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        // A real agent: it probes the sim fine, but advertises a URL nobody listens on.
        AgentRuntime agent = AgentRuntime.start(new AgentConfig(kafka.bootstrapServers(), cluster.topic, "gpu-hidden",
                "http://127.0.0.1:" + closedPort, hidden.url(), Backend.OLLAMA, 1, null, Duration.ofMillis(500),
                Duration.ofSeconds(1), Duration.ofSeconds(5), "/nonexistent/nvidia-smi", false, false), Clock.systemUTC());
        try {
            cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN));
            cluster.awaitRoutable(2);

            for (int i = 0; i < 20; i++) {
                assertThat(cluster.post("/v1/chat/completions", CHAT).statusCode()).isEqualTo(200);
            }

            JsonObject hiddenNode = node(cluster.admin("/admin/nodes"), "gpu-hidden");
            assertThat(hiddenNode.getString("state")).isEqualTo(NodeState.UP.name());
            assertThat(hiddenNode.getBoolean("ejected")).isTrue();
            assertThat(hiddenNode.getString("notRoutableReason")).contains("consecutive connect failures");
            Map<String, Object> reached = new HashMap<>(cluster.simStats("gpu-hidden").getJsonObject("requests").getMap());
            reached.remove("ollama.show"); // its own agent's probe of each model's template
            assertThat(reached).as("requests relayed to the hidden node").isEmpty();
            assertThat(node(cluster.admin("/admin/nodes"), "gpu-good").getInteger("capacity")).isEqualTo(8);
            assertThat(hiddenNode.getValue("capacity")).as("an Ollama server does not say").isNull();
        } finally {
            agent.close();
        }
    }

    @Test
    void retriesAnOverloadedNodeElsewhereWithoutEjectingIt() throws Exception {
        threeNodes();
        cluster.faults("gpu-a", new Faults(false, 503, false, -1, null, null));
        cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN));
        cluster.awaitRoutable(3);

        for (int i = 0; i < 30; i++) {
            HttpResponse<String> r = cluster.post("/v1/chat/completions", CHAT);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("x-upstream-node")).isNotEqualTo(Optional.of("gpu-a"));
        }
        assertThat(cluster.scheduler.proxyCounters().get(Counter.OVERLOAD_ANSWERS)).isPositive();
        assertThat(cluster.scheduler.health().isEjected("gpu-a")).isFalse();
    }

    @Test
    void routesByModelAndAnswersEveryErrorOfTheContract() throws Exception {
        Cluster.SimNode llama = cluster.sim("gpu-llama", c -> c);
        cluster.heartbeat("gpu-llama", llama.url(), b -> b.models(List.of("llama3:8b")));
        Cluster.SimNode qwen = cluster.sim("gpu-qwen", c -> c);
        cluster.heartbeat("gpu-qwen", qwen.url(), b -> b.models(List.of("qwen2.5:7b")));
        cluster.startScheduler(c -> c.proxy(p -> p.maxBodyBytes(4096).firstByteTimeout(Duration.ofMillis(500))));
        cluster.awaitRoutable(2);

        for (int i = 0; i < 5; i++) {
            assertThat(cluster.post("/api/chat", "{\"model\":\"qwen2.5:7b\",\"stream\":false,\"messages\":[]}")
                    .headers().firstValue("x-upstream-node")).hasValue("gpu-qwen");
            assertThat(cluster.post("/v1/completions", "{\"prompt\":\"x\",\"model\":\"llama3:8b\"}")
                    .headers().firstValue("x-upstream-node")).hasValue("gpu-llama");
        }

        assertError(cluster.post("/api/generate", "{\"model\":\"mistral:7b\",\"prompt\":\"x\"}"), 404,
                "model_not_found", "no routable node serves model 'mistral:7b'");
        assertError(cluster.post("/v1/chat/completions", "{\"model\":\"llama3:8b\",\"pad\":\"" + "x".repeat(5000) + "\"}"),
                413, "request_too_large", "request body is larger than 4096 bytes");

        cluster.faults("gpu-llama", new Faults(false, 0, true, -1, null, null));
        assertError(cluster.post("/v1/completions", "{\"model\":\"llama3:8b\",\"prompt\":\"x\"}"), 504,
                "upstream_timeout", "node gpu-llama did not answer within 500 ms");

        cluster.kill("gpu-llama");
        HttpResponse<String> unreachable = cluster.post("/v1/completions", "{\"model\":\"llama3:8b\",\"prompt\":\"x\"}");
        assertThat(unreachable.statusCode()).isEqualTo(502);
        assertThat(errorType(unreachable)).isEqualTo("upstream_unreachable");

        cluster.stopHeartbeats("gpu-llama");
        cluster.stopHeartbeats("gpu-qwen");
        await().atMost(Duration.ofSeconds(5)).until(() -> cluster.scheduler.table().snapshot().routable().isEmpty());
        assertError(cluster.get("/api/tags"), 503, "no_upstream", "no routable inference node");
    }

    @Test
    void officialNpmClientsStreamThroughTheProxy(@TempDir Path dir)
            throws Exception {
        NodeClients.install(dir);
        threeNodes();
        cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN));
        cluster.awaitRoutable(3);

        NodeClients.Run run = NodeClients.chat(dir,
                "http://127.0.0.1:" + cluster.scheduler.proxyPort(), "llama3:8b");

        assertThat(run.status()).as(run.output()).isZero();
        assertThat(run.output()).containsPattern("OPENAI \"\\[gpu-[abc]\\] the GPU streams tokens");
        assertThat(run.output()).containsPattern("OLLAMA \"\\[gpu-[abc]\\] the GPU streams tokens");
        assertThat(run.output()).contains("TAGS [\"llama3:8b\",\"qwen2.5:7b\"]");
    }

    private static void assertError(HttpResponse<String> r, int status, String type, String message) {
        assertThat(r.statusCode()).isEqualTo(status);
        assertThat(r.headers().firstValue("content-type")).hasValueSatisfying(ct -> assertThat(ct).startsWith("application/json"));
        assertThat(new JsonObject(r.body())).isEqualTo(new JsonObject()
                .put("error", new JsonObject().put("message", message).put("type", type)));
    }

    private static String errorType(HttpResponse<String> r) {
        return new JsonObject(r.body()).getJsonObject("error").getString("type");
    }

    private static JsonObject node(JsonObject nodes, String id) {
        JsonArray list = nodes.getJsonArray("nodes");
        for (int i = 0; i < list.size(); i++) {
            if (id.equals(list.getJsonObject(i).getString("nodeId"))) {
                return list.getJsonObject(i);
            }
        }
        throw new AssertionError("no node " + id + " in " + nodes.encode());
    }
}
