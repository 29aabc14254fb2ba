package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.ProxyConfigBuilder;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.metrics.ModelSignals;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.Tracing;
import io.heartgate.scheduler.trust.ApiKeys;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway queue through the real proxy: nodes of known capacity that hold each request until
 * the test lets it go, so what reaches a node, and when, is exact.
 */
class GatewayQueueIT {

    private static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final Semaphore release = new Semaphore(0);
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private ProxyServer proxy;

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

    /** A node that answers each request once the test releases one permit, or after 20 s. */
    private RawNode holdingNode() throws IOException {
        RawNode n = new RawNode((req, out) -> {
            try {
                release.tryAcquire(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            RawNode.respond(out, "200 OK", "", "{\"done\":true}");
            return true;
        });
        closing.add(n);
        return n;
    }

    private NodeTable table;

    private void start(int capacity, UnaryOperator<ProxyConfigBuilder> config, RawNode... nodes) {
        start(capacity, config, Stages.Access.OPEN, nodes);
    }

    private void start(int capacity, UnaryOperator<ProxyConfigBuilder> config, Stages.Access access, RawNode... nodes) {
        table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        for (int i = 0; i < nodes.length; i++) {
            table.apply(Heartbeat.builder("n" + (i + 1), nodes[i].url()).instance("i1").seq(1L).state(NodeState.UP)
                    .intervalMs(60_000).models(List.of("llama3:8b")).capacity(capacity).build(), Instant.now());
        }
        table.publish();
        ProxyConfig c = config.apply(new ProxyConfigBuilder()).build();
        PassiveHealth health = new PassiveHealth(Clock.systemUTC(), c.ejectAfter(), c.ejectFor(), Duration.ofMinutes(5));
        proxy = ProxyServer.start(c, table::snapshot, new RouteSelector(Strategy.LEAST_CONNECTIONS.create()), health,
                health, new ProxyCounters(), new RequestMetrics(registry, Ticker.SYSTEM), Ticker.SYSTEM, new Draining(),
                access, null, Tracing.OFF);
    }

    private CompletableFuture<HttpResponse<String>> chat() {
        return chat(null);
    }

    /** Sends the chat request with {@code key} as its bearer credential, or none. */
    private CompletableFuture<HttpResponse<String>> chat(String key) {
        return chat(key, CHAT);
    }

    /** Sends {@code body} to the chat endpoint with {@code key} as its bearer credential, or none. */
    private CompletableFuture<HttpResponse<String>> chat(String key, String body) {
        HttpRequest.Builder req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.port() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(30)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            req.header("authorization", "Bearer " + key);
        }
        return http.sendAsync(req.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Writes the chat request on a raw socket, for a client whose address or hang-up the test controls. */
    private static void sendChat(Socket s) throws IOException {
        byte[] body = CHAT.getBytes(StandardCharsets.UTF_8);
        s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                + "content-length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().write(body);
        s.getOutputStream().flush();
    }

    private double depth() {
        return registry.get("heartgate_queue_depth").gauge().value();
    }

    private double exits(String outcome) {
        return registry.get("heartgate_queue_exits").tag("outcome", outcome).counter().count();
    }

    @Test
    void withEveryNodeAtCapacityTheNextRequestWaitsThenCompletesWhenOneFrees() throws Exception {
        RawNode a = holdingNode();
        RawNode b = holdingNode();
        start(1, c -> c, a, b);
        CompletableFuture<HttpResponse<String>> first = chat();
        CompletableFuture<HttpResponse<String>> second = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> a.seen.size() + b.seen.size() == 2);
        CompletableFuture<HttpResponse<String>> third = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> depth() == 1.0);
        assertThat(a.seen.size() + b.seen.size()).as("no node is sent more than its one slot").isEqualTo(2);
        assertThat(third).isNotDone();
        ModelSignals.Signal llama = ModelSignals.of(table.snapshot(), proxy.queueByModel()).get("llama3:8b");
        assertThat(llama.saturation()).as("the autoscaling signal: (2 in flight + 1 waiting) / 2 slots").isEqualTo(1.5);
        assertThat(llama.queued()).isEqualTo(1);

        release.release(1); // one of the first two ends: the third leaves the queue for the freed slot
        await().atMost(Duration.ofSeconds(10)).until(() -> a.seen.size() + b.seen.size() == 3);
        assertThat(depth()).isZero();
        assertThat(a.seen).hasSizeLessThanOrEqualTo(2);
        assertThat(b.seen).hasSizeLessThanOrEqualTo(2);
        release.release(2);
        for (CompletableFuture<HttpResponse<String>> f : List.of(first, second, third)) {
            HttpResponse<String> r = f.get(10, TimeUnit.SECONDS);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("{\"done\":true}");
        }
        assertThat(exits("served")).isEqualTo(1.0);
        assertThat(registry.get("heartgate_queue_wait").timer().count()).isEqualTo(1);
    }

    @Test
    void aFullQueueAnswers503OverloadedWithRetryAfter() throws Exception {
        RawNode a = holdingNode();
        start(1, c -> c.maxQueue(1), a);
        CompletableFuture<HttpResponse<String>> first = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> a.seen.size() == 1);
        CompletableFuture<HttpResponse<String>> queued = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> depth() == 1.0);

        HttpResponse<String> refused = chat().get(10, TimeUnit.SECONDS);
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.body()).contains("\"type\":\"overloaded\"").contains("gateway queue is full");
        assertThat(refused.headers().firstValue("retry-after")).hasValue("1");
        assertThat(registry.get("heartgate_queue_rejected").counter().count()).isEqualTo(1.0);
        assertThat(a.seen).hasSize(1);

        release.release(2);
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(queued.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }

    @Test
    void aFullQueueTakesAnotherCallersRequestInPlaceOfTheNewestOfTheCallerWithTheMostWaiting() throws Exception {
        RawNode a = holdingNode();
        start(1, c -> c.maxQueue(2), a);
        CompletableFuture<HttpResponse<String>> first = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> a.seen.size() == 1);
        CompletableFuture<HttpResponse<String>> older = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> depth() == 1.0);
        CompletableFuture<HttpResponse<String>> newer = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> depth() == 2.0);

        // Another caller (client address 127.0.0.2, no keys here) finds the queue full of 127.0.0.1's
        try (Socket other = new Socket(InetAddress.getByName("127.0.0.1"), proxy.port(), InetAddress.getByName("127.0.0.2"), 0)) {
            other.setSoTimeout(10_000);
            sendChat(other);

            HttpResponse<String> pushedOut = newer.get(10, TimeUnit.SECONDS);
            assertThat(pushedOut.statusCode()).isEqualTo(503);
            assertThat(pushedOut.body()).contains("\"type\":\"overloaded\"").contains("took this one's place");
            assertThat(pushedOut.headers().firstValue("retry-after")).hasValue("1");
            assertThat(exits("pushed_out")).isEqualTo(1.0);
            assertThat(depth()).isEqualTo(2.0);
            assertThat(older).isNotDone();

            release.release(3);
            assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            assertThat(older.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            String answer = new String(other.getInputStream().readNBytes(12), StandardCharsets.US_ASCII);
            assertThat(answer).isEqualTo("HTTP/1.1 200");
        }
        assertThat(a.seen).hasSize(3);
        assertThat(registry.get("heartgate_queue_rejected").counter().count()).isZero();
    }

    @Test
    void aRequestPastTheQueueTimeoutIsAnswered503OverloadedAndNeverReachesANode() throws Exception {
        RawNode a = holdingNode();
        start(1, c -> c.queueTimeout(Duration.ofMillis(300)), a);
        CompletableFuture<HttpResponse<String>> first = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> a.seen.size() == 1);
        HttpResponse<String> late = chat().get(10, TimeUnit.SECONDS);
        assertThat(late.statusCode()).isEqualTo(503);
        assertThat(late.body()).contains("\"type\":\"overloaded\"").contains("queue timeout (300ms)");
        assertThat(late.headers().firstValue("retry-after")).isPresent();
        assertThat(exits("timeout")).isEqualTo(1.0);
        release.release(1);
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(a.seen).hasSize(1);
    }

    @Test
    void aClientThatHangsUpWhileQueuedLeavesTheQueueAtOnce() throws Exception {
        RawNode a = holdingNode();
        start(1, c -> c, a);
        CompletableFuture<HttpResponse<String>> first = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> a.seen.size() == 1);
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
            sendChat(s);
            await().atMost(Duration.ofSeconds(10)).until(() -> depth() == 1.0);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> depth() == 0.0);
        assertThat(exits("client_gone")).isEqualTo(1.0);
        release.release(1);
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        // The slot it would have had is free: the next request goes straight to the node.
        CompletableFuture<HttpResponse<String>> next = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> a.seen.size() == 2);
        release.release(1);
        assertThat(next.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(exits("served")).isZero();
    }

    @Test
    void aRetryFindingEveryOtherNodeFullWaitsInTheQueueToo() throws Exception {
        RawNode busy = new RawNode((req, out) -> {
            RawNode.respond(out, "503 Service Unavailable", "", "{\"error\":\"server busy, please try again\"}");
            return true;
        });
        closing.add(busy);
        RawNode holding = holdingNode();
        start(1, c -> c, busy, holding);
        CompletableFuture<HttpResponse<String>> first = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> holding.seen.size() == 1);
        // The second finds only the busy node with room; its 503 sends it on, and the other node is full.
        CompletableFuture<HttpResponse<String>> second = chat();
        await().atMost(Duration.ofSeconds(10)).until(() -> depth() == 1.0);
        assertThat(busy.seen).isNotEmpty();
        assertThat(holding.seen).hasSize(1);
        release.release(1);
        await().atMost(Duration.ofSeconds(10)).until(() -> holding.seen.size() == 2);
        release.release(1);
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(second.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(exits("served")).isEqualTo(1.0);
    }

    @Test
    void aRetryThatWaitedAndWasAnswered503OverloadedGetsItsRequestTokenBack() throws Exception {
        RawNode busy = new RawNode((req, out) -> {
            RawNode.respond(out, "503 Service Unavailable", "", "{\"error\":\"server busy, please try again\"}");
            return true;
        });
        closing.add(busy);
        RawNode holding = holdingNode();
        String key = "hg-retry-test-key";
        ApiKeys keys = ApiKeys.parse("team " + ApiKeys.hash(key) + " rpm=3");
        start(1, c -> c.queueTimeout(Duration.ofMillis(300)), new Stages.Access(() -> keys, null, false), busy, holding);
        CompletableFuture<HttpResponse<String>> first = chat(key);
        await().atMost(Duration.ofSeconds(10)).until(() -> holding.seen.size() == 1);
        // The second goes to the busy node, whose 503 sends it on to wait for the full one, past the timeout.
        HttpResponse<String> second = chat(key).get(10, TimeUnit.SECONDS);
        assertThat(busy.seen).isNotEmpty();
        assertThat(second.statusCode()).isEqualTo(503);
        assertThat(second.body()).contains("\"type\":\"overloaded\"");
        assertThat(exits("timeout")).isEqualTo(1.0);
        assertThat(second.headers().firstValue("x-ratelimit-remaining-requests")).as("3, less the first; the second's back")
                .hasValue("2");
        release.release(1);
        assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        CompletableFuture<HttpResponse<String>> third = chat(key);
        CompletableFuture<HttpResponse<String>> fourth = chat(key);
        release.release(2);
        assertThat(third.get(10, TimeUnit.SECONDS).statusCode()).isNotEqualTo(429);
        assertThat(fourth.get(10, TimeUnit.SECONDS).statusCode()).as("within rpm=3 with the token back").isNotEqualTo(429);
    }

    /** Starts a proxy of one node with 3 slots and {@code --reserve-slots 1}, keys "flood" and "light". */
    private RawNode reservingOneOfThree() throws IOException {
        RawNode node = holdingNode();
        ApiKeys keys = ApiKeys.parse("flood " + ApiKeys.hash("hg-flood") + "\nlight " + ApiKeys.hash("hg-light") + "\n");
        start(3, c -> c.reserveSlots(1), new Stages.Access(() -> keys, null, false), node);
        return node;
    }

    /** Fills the node's 3 slots with the flooding key's requests and queues {@code waiting} more. */
    private List<CompletableFuture<HttpResponse<String>>> flood(RawNode node, int waiting) {
        List<CompletableFuture<HttpResponse<String>>> flood = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            flood.add(chat("hg-flood"));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> node.seen.size() == 3);
        for (int i = 0; i < waiting; i++) {
            flood.add(chat("hg-flood"));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> depth() == waiting);
        return flood;
    }

    @Test
    void withAReserveAFloodingKeyLeavesTheLastFreeSlotToAnotherKey() throws Exception {
        RawNode node = reservingOneOfThree();
        List<CompletableFuture<HttpResponse<String>>> flood = flood(node, 6);
        List<CompletableFuture<HttpResponse<String>>> light = new ArrayList<>();
        light.add(chat("hg-light")); // queues behind the flood: the light key is now present
        await().atMost(Duration.ofSeconds(10)).until(() -> depth() == 7.0);

        release.release(1); // one slot free: to the light key
        await().atMost(Duration.ofSeconds(10)).until(() -> node.seen.size() == 4 && depth() == 6.0);
        release.release(1); // one more: the last free, held from the flood
        await().atMost(Duration.ofSeconds(10)).until(() -> release.availablePermits() == 0);
        String lightBody = CHAT.replace("hi", "from the light key");
        light.add(chat("hg-light", lightBody));

        await().atMost(Duration.ofSeconds(10)).until(() -> node.seen.size() == 5);
        assertThat(new String(node.seen.get(4).body(), StandardCharsets.UTF_8)).as("the held slot went to the light key")
                .contains("from the light key");
        assertThat(depth()).as("the flood still waits").isEqualTo(6.0);
        release.release(1000);
        for (CompletableFuture<HttpResponse<String>> f : light) {
            assertThat(f.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        }
        for (CompletableFuture<HttpResponse<String>> f : flood) {
            assertThat(f.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void withAReserveAFloodingKeyAloneGetsEverySlot() throws Exception {
        RawNode node = reservingOneOfThree();
        List<CompletableFuture<HttpResponse<String>>> flood = flood(node, 6);

        release.release(2); // no one else came: both free slots go to the flood, the reserve's too
        await().atMost(Duration.ofSeconds(10)).until(() -> node.seen.size() == 5 && depth() == 4.0);
        release.release(1000);
        for (CompletableFuture<HttpResponse<String>> f : flood) {
            assertThat(f.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        }
    }
}
