package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.ProxyConfigBuilder;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.Tracing;
import io.heartgate.sim.NodeClients;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Coding agents' clients through the proxy under the affinity strategy's default rule, on three
 * simulated nodes: the official Anthropic client streams a conversation (its session header keeps
 * both turns on one node, and the gateway counts the tokens of Anthropic's usage events); the
 * official openai client's Responses API streams an answer, continues it, retrieves it, and a follow-up
 * of an id no node made is the node's 404 to tell.
 */
class AgentClientsIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODEL = "llama3:8b";

    private final List<Vertx> vertxes = new ArrayList<>();
    private final List<SimServer> sims = new ArrayList<>();
    private final HttpClient http = HttpClient.newHttpClient();
    private ProxyServer proxy;
    private SimpleMeterRegistry registry;

    @BeforeEach
    void start() throws Exception {
        NodeTable table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        for (String name : List.of("gpu-a", "gpu-b", "gpu-c")) {
            Vertx vertx = Vertx.vertx();
            vertxes.add(vertx);
            SimServer sim = new SimServer(new SimConfigBuilder(name, List.of(MODEL))
                    .timing(8, Duration.ofMillis(2), Duration.ofMillis(5)).prefill(1000, 16, Duration.ZERO).build(),
                    Clock.systemUTC(), System::nanoTime);
            vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
            sims.add(sim);
            table.apply(Heartbeat.builder(name, "http://127.0.0.1:" + sim.port()).instance("i1").seq(1L)
                    .state(NodeState.UP).backend("vllm").intervalMs(60_000).capacity(8).models(List.of(MODEL)).build(),
                    Instant.now());
        }
        table.publish();
        ProxyConfig c = new ProxyConfigBuilder().build();
        PassiveHealth health = new PassiveHealth(Clock.systemUTC(), c.ejectAfter(), c.ejectFor(), Duration.ofMinutes(5));
        registry = new SimpleMeterRegistry();
        proxy = ProxyServer.start(c, table::snapshot,
                new RouteSelector(Strategy.sticky(Duration.ofSeconds(1), Strategy.ROUND_ROBIN, Ticker.SYSTEM)),
                health, health, new ProxyCounters(), new RequestMetrics(registry, Ticker.SYSTEM), Ticker.SYSTEM,
                new Draining(), Stages.Access.OPEN, null, Tracing.OFF);
    }

    @AfterEach
    void stop() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        for (Vertx v : vertxes) {
            v.close().await(10, TimeUnit.SECONDS);
        }
    }

    private long served(SimServer sim, String endpoint) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + sim.port()
                + "/sim/stats")).build(), HttpResponse.BodyHandlers.ofString());
        JsonNode n = JSON.readTree(r.body()).path("requests").path(endpoint);
        return n.isMissingNode() ? 0 : n.asLong();
    }

    private double tokens(String type) {
        Counter c = registry.find("heartgate_tokens").tag("type", type).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void theAnthropicClientStreamsAConversationOnOneNodeAndItsUsageIsCounted(@TempDir Path dir) throws Exception {
        NodeClients.install(dir);

        NodeClients.Run run = NodeClients.messages(dir, "http://127.0.0.1:" + proxy.port(), MODEL, "session-42");

        assertThat(run.status()).as(run.output()).isZero();
        List<JsonNode> turns = new ArrayList<>();
        for (String line : run.output().lines().filter(l -> l.startsWith("MESSAGE ")).toList()) {
            turns.add(JSON.readTree(line.substring(8)));
        }
        assertThat(turns).hasSize(2);
        long prompt = 0;
        long completion = 0;
        for (JsonNode t : turns) {
            assertThat(t.get("text").asText()).isNotBlank();
            assertThat(t.get("stop").asText()).isEqualTo("end_turn");
            prompt += t.get("usage").get("input_tokens").asLong();
            completion += t.get("usage").get("output_tokens").asLong();
        }
        assertThat(prompt).isPositive();
        assertThat(completion).isEqualTo(16);
        List<Long> perNode = new ArrayList<>();
        for (SimServer sim : sims) {
            perNode.add(served(sim, "anthropic.messages"));
        }
        assertThat(perNode).as("both turns on one node: the session header is the key").containsOnly(0L, 2L);
        assertThat(tokens("prompt")).as("input tokens from message_start").isEqualTo(prompt);
        assertThat(tokens("completion")).as("output tokens from message_delta").isEqualTo(completion);
    }

    @Test
    void theOpenAiClientsResponsesContinueOnTheNodeThatMadeThem(@TempDir Path dir) throws Exception {
        NodeClients.install(dir);

        NodeClients.Run run = NodeClients.responses(dir, "http://127.0.0.1:" + proxy.port(), MODEL);

        assertThat(run.status()).as(run.output()).isZero();
        JsonNode continued = line(run, "CONTINUED ");
        assertThat(continued.get("previous").asBoolean()).isTrue();
        assertThat(continued.get("cached").asLong()).as("the node held the conversation's prefix").isPositive();
        assertThat(line(run, "RETRIEVED ").get("same").asBoolean()).isTrue();
        assertThat(line(run, "MISSING ").get("status").asInt()).isEqualTo(404);
        SimServer maker = null;
        for (SimServer sim : sims) {
            if (served(sim, "openai.responses.retrieve") == 1) {
                maker = sim;
            }
        }
        assertThat(maker).as("one node retrieved it").isNotNull();
        assertThat(served(maker, "openai.responses")).as("and made it and its continuation (the unknown id: any node)")
                .isGreaterThanOrEqualTo(2);
    }

    private static JsonNode line(NodeClients.Run run, String prefix) throws Exception {
        return JSON.readTree(run.output().lines().filter(l -> l.startsWith(prefix)).findFirst().orElseThrow()
                .substring(prefix.length()));
    }
}
