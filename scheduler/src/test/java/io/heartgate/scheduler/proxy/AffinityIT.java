package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

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
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The affinity strategy through the real proxy: a conversation without any session header keeps
 * its node by its prompt's beginning, and spills, saying so, when that node is at its load bound.
 */
class AffinityIT {

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final Semaphore release = new Semaphore(0);
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final List<RawNode> nodes = new ArrayList<>();
    private ProxyServer proxy;

    @BeforeEach
    void start() throws IOException {
        NodeTable table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        for (int i = 1; i <= 3; i++) {
            String id = "n" + i;
            // Answers at once, naming itself; a request whose last message says HOLD waits for the test.
            RawNode n = new RawNode((req, out) -> {
                if (new String(req.body(), StandardCharsets.UTF_8).contains("HOLD")) {
                    try {
                        release.tryAcquire(20, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                RawNode.respond(out, "200 OK", "", id);
                return true;
            });
            closing.add(n);
            nodes.add(n);
            table.apply(Heartbeat.builder(id, n.url()).instance("i1").seq(1L).state(NodeState.UP).intervalMs(60_000)
                    .models(List.of("llama3:8b")).build(), Instant.now());
        }
        table.publish();
        ProxyConfig c = new ProxyConfigBuilder().build();
        PassiveHealth health = new PassiveHealth(Clock.systemUTC(), c.ejectAfter(), c.ejectFor(), Duration.ofMinutes(5));
        proxy = ProxyServer.start(c, table::snapshot, new RouteSelector(Strategy.affinity(1.25, Strategy.ROUND_ROBIN)),
                health, health, new ProxyCounters(), new RequestMetrics(registry, Ticker.SYSTEM), Ticker.SYSTEM, new Draining(),
                Stages.Access.OPEN, null, Tracing.OFF);
    }

    @AfterEach
    void tearDown() throws Exception {
        release.release(1000);
        if (proxy != null) {
            proxy.close();
        }
        for (AutoCloseable c : closing) {
            c.close();
        }
    }

    /** Turn {@code turn} of one conversation: the whole history so far, the last user message {@code last}. */
    private static String turn(String system, int turn, String last) {
        StringBuilder m = new StringBuilder("{\"role\":\"system\",\"content\":\"" + system + "\"}");
        for (int t = 1; t < turn; t++) {
            m.append(",{\"role\":\"user\",\"content\":\"question ").append(t).append("\"}")
                    .append(",{\"role\":\"assistant\",\"content\":\"answer ").append(t).append("\"}");
        }
        m.append(",{\"role\":\"user\",\"content\":\"").append(turn == 1 ? "question 1" : last).append("\"}");
        return "{\"model\":\"llama3:8b\",\"stream\":false,\"messages\":[" + m + "]}";
    }

    private CompletableFuture<HttpResponse<String>> send(String body) {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.port() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(30)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return http.sendAsync(req, HttpResponse.BodyHandlers.ofString());
    }

    private double affinity(String result) {
        var c = registry.find("heartgate_affinity").tag("result", result).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void theTurnsOfOneConversationReachOneNodeThenSpillWhenItIsAtItsBound() throws Exception {
        String own = null;
        for (int t = 1; t <= 6; t++) {
            HttpResponse<String> r = send(turn("You are a helpful assistant.", t, "question " + t)).get(10, TimeUnit.SECONDS);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("X-Heartgate-Affinity")).as("turn %d", t).hasValue("hit");
            own = own == null ? r.body() : own;
            assertThat(r.body()).as("turn %d", t).isEqualTo(own);
        }
        // Other conversations (other system prompts) spread over the nodes rather than all landing on one.
        Set<String> elsewhere = new HashSet<>();
        for (int c = 0; c < 30; c++) {
            elsewhere.add(send(turn("Persona number " + c + ".", 1, "")).get(10, TimeUnit.SECONDS).body());
        }
        assertThat(elsewhere).hasSizeGreaterThan(1);

        // Turn 7 is held on its node: one in flight of one in all, at the bound ceil(1.25 x 2 / 3) = 1.
        CompletableFuture<HttpResponse<String>> held = send(turn("You are a helpful assistant.", 7, "HOLD"));
        String ownNode = own;
        int ownIndex = Integer.parseInt(own.substring(1)) - 1;
        await().atMost(Duration.ofSeconds(10)).until(() -> nodes.get(ownIndex).seen.stream()
                .anyMatch(s -> new String(s.body(), StandardCharsets.UTF_8).contains("HOLD")));

        HttpResponse<String> spilled = send(turn("You are a helpful assistant.", 8, "question 8")).get(10, TimeUnit.SECONDS);
        assertThat(spilled.statusCode()).isEqualTo(200);
        assertThat(spilled.body()).isNotEqualTo(ownNode);
        assertThat(spilled.headers().firstValue("X-Heartgate-Affinity")).hasValue("spill");
        assertThat(registry.get("heartgate_affinity_spills").tag("node", ownNode).counter().count()).isEqualTo(1.0);

        release.release(1);
        assertThat(held.get(10, TimeUnit.SECONDS).body()).isEqualTo(ownNode);
        HttpResponse<String> back = send(turn("You are a helpful assistant.", 9, "question 9")).get(10, TimeUnit.SECONDS);
        assertThat(back.body()).as("room again: the conversation is back on its node").isEqualTo(ownNode);
        assertThat(back.headers().firstValue("X-Heartgate-Affinity")).hasValue("hit");

        HttpResponse<String> keyless = send("{\"model\":\"llama3:8b\"}").get(10, TimeUnit.SECONDS);
        assertThat(keyless.headers().firstValue("X-Heartgate-Affinity")).hasValue("none");
        assertThat(affinity("spill")).isEqualTo(1.0);
        assertThat(affinity("none")).isEqualTo(1.0);
        assertThat(affinity("hit")).isGreaterThanOrEqualTo(8.0);
    }
}
