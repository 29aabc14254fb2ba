package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.sim.NodeClients;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The merged catalogue through a real broker, real agents (the packaged jar, one process per node)
 * and simulated Ollama nodes serving different models: {@code /v1/models}, {@code /api/tags} and
 * {@code /api/ps} are the exact union, the same on every call, with the details the agents read
 * from the nodes; a node whose agent stops (its tombstone) takes its only model out within 1 s.
 */
@ExtendWith(KafkaExtension.class)
class CatalogueIT {

    @TempDir
    Path dir;

    private Cluster cluster;
    private AgentProcesses agents;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        Assumptions.assumeTrue(AgentProcesses.packaged(), "the packaged agent (mvn verify builds it before the scheduler)");
        cluster = new Cluster(kafka.bootstrapServers());
        agents = new AgentProcesses(kafka.bootstrapServers(), cluster.topic, dir);
        Map<String, List<String>> fleet = Map.of("gpu-a", List.of("llama3:8b", "qwen2.5:7b"),
                "gpu-b", List.of("llama3:8b", "mistral:7b"), "gpu-c", List.of("phi3:mini"));
        for (Map.Entry<String, List<String>> e : fleet.entrySet()) {
            agents.start(e.getKey(), cluster.sim(e.getKey(), e.getValue(), c -> c).url());
        }
        cluster.startScheduler(c -> { });
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

    private JsonObject get(String path) throws Exception {
        var r = cluster.get(path);
        assertThat(r.statusCode()).as(path).isEqualTo(200);
        assertThat(r.headers().firstValue("x-upstream-node")).as("answered by the scheduler").isEmpty();
        return new JsonObject(r.body());
    }

    private static Set<String> names(JsonArray list, String field) {
        return list.stream().map(o -> ((JsonObject) o).getString(field)).collect(Collectors.toSet());
    }

    @Test
    void theCatalogueIsTheUnionOfTheNodesOnEveryCallAndLosesAModelWithItsOnlyNode() throws Exception {
        Set<String> all = Set.of("llama3:8b", "qwen2.5:7b", "mistral:7b", "phi3:mini");
        for (int i = 0; i < 5; i++) {
            assertThat(names(get("/v1/models").getJsonArray("data"), "id")).isEqualTo(all);
            assertThat(names(get("/api/tags").getJsonArray("models"), "name")).isEqualTo(all);
            assertThat(names(get("/api/ps").getJsonArray("models"), "name")).isEqualTo(all); // the sim holds all loaded
        }
        JsonObject phi = get("/api/tags").getJsonArray("models").stream().map(o -> (JsonObject) o)
                .filter(m -> m.getString("name").equals("phi3:mini")).findFirst().orElseThrow();
        assertThat(phi.getString("digest")).isNotBlank();
        assertThat(phi.getJsonObject("details").getString("format")).isEqualTo("gguf");

        var admin = cluster.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + cluster.scheduler.adminPort() + "/admin/models")).build(), HttpResponse.BodyHandlers.ofString());
        JsonObject llama = new JsonObject(admin.body()).getJsonArray("models").stream().map(o -> (JsonObject) o)
                .filter(m -> m.getString("name").equals("llama3:8b")).findFirst().orElseThrow();
        assertThat(llama.getJsonArray("nodes").getList()).containsExactly("gpu-a", "gpu-b");
        assertThat(llama.getJsonArray("loadedOn").getList()).containsExactly("gpu-a", "gpu-b");
        assertThat(llama.getBoolean("digestsDiffer")).as("the same weights on both").isFalse();

        long stop = System.nanoTime();
        agents.terminate("gpu-c"); // a tombstone
        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                .until(() -> !names(get("/v1/models").getJsonArray("data"), "id").contains("phi3:mini"));
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stop);
        System.out.println("[catalogue-it] phi3:mini left the catalogue " + tookMs + " ms after its agent's SIGTERM");
        assertThat(tookMs).as("ms from the agent's stop to the model's removal").isLessThanOrEqualTo(1000);
        assertThat(names(get("/api/tags").getJsonArray("models"), "name"))
                .containsExactlyInAnyOrder("llama3:8b", "qwen2.5:7b", "mistral:7b");
    }

    @Test
    void theOfficialOpenaiAndOllamaClientsListExactlyTheUnionOnEveryCall() throws Exception {
        Set<String> all = Set.of("llama3:8b", "qwen2.5:7b", "mistral:7b", "phi3:mini");
        Path clients = Files.createDirectories(dir.resolve("clients"));
        NodeClients.install(clients);
        NodeClients.Run run = NodeClients.catalogue(clients, "http://127.0.0.1:" + cluster.scheduler.proxyPort(),
                "phi3:mini");
        assertThat(run.status()).as(run.output()).isZero();
        Map<String, List<Set<String>>> seen = new HashMap<>();
        for (String line : run.output().lines().toList()) {
            int space = line.indexOf(' ');
            if (space > 0 && List.of("MODELS", "TAGS", "PS").contains(line.substring(0, space))) {
                Set<String> names = new JsonArray(line.substring(space + 1)).stream().map(String.class::cast)
                        .collect(Collectors.toSet());
                seen.computeIfAbsent(line.substring(0, space), k -> new ArrayList<>()).add(names);
            }
        }
        for (String call : List.of("MODELS", "TAGS", "PS")) {
            assertThat(seen.get(call)).as(call + " in " + run.output()).hasSize(3).allSatisfy(names ->
                    assertThat(names).isEqualTo(all));
        }
        assertThat(run.output()).contains("RETRIEVE \"phi3:mini\"");
    }
}
