package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Sticky affinity end to end on three nodes of one slot each (their agents report capacity 1):
 * a conversation's turns sent back to back, each on a new connection as soon as the last byte of
 * the answer before it came, all reach its node (the slot is free before the client has that
 * byte); and a Responses API follow-up reaches the node that made the response it continues, as
 * vLLM's per-process store needs (these nodes answer 404 for an id they did not make).
 */
class StickyAffinityIT {

    private static final Pattern PREVIOUS = Pattern.compile("\"previous_response_id\":\"([^\"]+)\"");

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final AtomicInteger made = new AtomicInteger();
    private ProxyServer proxy;

    @BeforeEach
    void start() throws IOException {
        NodeTable table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        for (int i = 1; i <= 3; i++) {
            String id = "n" + i;
            Set<String> store = ConcurrentHashMap.newKeySet(); // the responses this node made
            RawNode n = new RawNode((req, out) -> {
                String body = new String(req.body(), StandardCharsets.UTF_8);
                if (!req.requestLine().contains("/v1/responses")) {
                    RawNode.respond(out, "200 OK", "", id);
                    return true;
                }
                Matcher previous = PREVIOUS.matcher(body);
                if (previous.find() && !store.contains(previous.group(1))) {
                    RawNode.respond(out, "404 Not Found", "", "{\"error\":{\"message\":\"Response with id '"
                            + previous.group(1) + "' not found.\",\"type\":\"invalid_request_error\"}}");
                    return true;
                }
                String resp = "resp_" + id + "_" + made.incrementAndGet();
                store.add(resp);
                RawNode.respond(out, "200 OK", "", "{\"id\":\"" + resp + "\",\"object\":\"response\",\"status\":"
                        + "\"completed\",\"output\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":2}}");
                return true;
            });
            closing.add(n);
            table.apply(Heartbeat.builder(id, n.url()).instance("i1").seq(1L).state(NodeState.UP).intervalMs(60_000)
                    .capacity(1).models(List.of("llama3:8b")).build(), Instant.now());
        }
        table.publish();
        ProxyConfig c = new ProxyConfigBuilder().build();
        PassiveHealth health = new PassiveHealth(Clock.systemUTC(), c.ejectAfter(), c.ejectFor(), Duration.ofMinutes(5));
        proxy = ProxyServer.start(c, table::snapshot,
                new RouteSelector(Strategy.sticky(Duration.ofSeconds(1), Strategy.ROUND_ROBIN, Ticker.SYSTEM)),
                health, health, new ProxyCounters(), new RequestMetrics(registry, Ticker.SYSTEM), Ticker.SYSTEM,
                new Draining(), Stages.Access.OPEN, null, Tracing.OFF);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        for (AutoCloseable c : closing) {
            c.close();
        }
    }

    /** An answer as the client read it: status, headers (names in lower case), body. */
    private record Answer(int status, Map<String, String> headers, String body) {
    }

    /** Sends one request on a new connection and reads its answer up to its last byte, no further. */
    private Answer post(String path, String json, String session) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
            s.setSoTimeout(10_000);
            byte[] body = json.getBytes(StandardCharsets.UTF_8);
            OutputStream out = s.getOutputStream();
            out.write(("POST " + path + " HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
                    + (session == null ? "" : "x-session-id: " + session + "\r\n")
                    + "content-length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
            InputStream in = s.getInputStream();
            String status = line(in);
            Map<String, String> headers = new HashMap<>();
            for (String h = line(in); !h.isEmpty(); h = line(in)) {
                int colon = h.indexOf(':');
                headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
            }
            byte[] content = in.readNBytes(Integer.parseInt(headers.get("content-length")));
            return new Answer(Integer.parseInt(status.split(" ")[1]), headers, new String(content, StandardCharsets.UTF_8));
        }
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new IOException("the connection closed mid-head");
            }
            if (c != '\r') {
                b.write(c);
            }
        }
        return b.toString(StandardCharsets.ISO_8859_1);
    }

    @Test
    void turnsSentBackToBackOnAQuietFleetAllReachTheirNode() throws IOException {
        for (int conversation = 0; conversation < 3; conversation++) {
            String home = null;
            StringBuilder history = new StringBuilder();
            for (int t = 1; t <= 25; t++) {
                history.append("{\"role\":\"user\",\"content\":\"question ").append(t).append("\"},");
                Answer a = post("/v1/chat/completions", "{\"model\":\"llama3:8b\",\"messages\":["
                        + history + "{\"role\":\"user\",\"content\":\"go on\"}]}", "conversation-" + conversation);
                assertThat(a.status()).isEqualTo(200);
                assertThat(a.headers().get("x-heartgate-affinity")).as("conversation %d turn %d", conversation, t)
                        .isEqualTo("hit");
                home = home == null ? a.body() : home;
                assertThat(a.body()).as("conversation %d turn %d", conversation, t).isEqualTo(home);
                history.append("{\"role\":\"assistant\",\"content\":\"answer ").append(t).append("\"},");
            }
        }
    }

    @Test
    void aResponsesFollowUpReachesTheNodeThatMadeItsResponse() throws IOException {
        Answer first = post("/v1/responses", "{\"model\":\"llama3:8b\",\"input\":\"hello\",\"user\":\"u0\"}", null);
        assertThat(first.status()).isEqualTo(200);
        Matcher id = Pattern.compile("\"id\":\"(resp_[^\"]+)\"").matcher(first.body());
        assertThat(id.find()).isTrue();
        String previous = id.group(1);
        String maker = previous.split("_")[1];
        for (int t = 1; t <= 9; t++) {
            // Each follow-up names another user, whose key alone would place it on another node now and then.
            Answer next = post("/v1/responses", "{\"model\":\"llama3:8b\",\"input\":\"and then?\",\"user\":\"u" + t
                    + "\",\"previous_response_id\":\"" + previous + "\"}", null);
            assertThat(next.status()).as("follow-up %d: %s", t, next.body()).isEqualTo(200);
            Matcher m = Pattern.compile("\"id\":\"(resp_[^\"]+)\"").matcher(next.body());
            assertThat(m.find()).isTrue();
            previous = m.group(1);
            assertThat(previous.split("_")[1]).isEqualTo(maker);
        }
        Answer unknown = post("/v1/responses", "{\"model\":\"llama3:8b\",\"input\":\"x\",\"user\":\"u0\","
                + "\"previous_response_id\":\"resp_made_elsewhere\"}", null);
        assertThat(unknown.status()).as("an id this scheduler never relayed: routed as any, the node says 404")
                .isEqualTo(404);
    }
}
