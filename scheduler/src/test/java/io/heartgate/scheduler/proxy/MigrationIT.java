package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.config.ProxyConfigBuilder;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.balancer.Strategy;
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
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A stream whose node breaks off mid-answer goes on from another node (issue: stream migration),
 * on scripted nodes that speak vLLM's wire shapes: what the continuation asks, and what the client
 * reads (one stream, the first node's ids, no second role chunk, whitespace at the cut not
 * doubled, usage summed, one {@code [DONE]}).
 */
class MigrationIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CHAT = "{\"model\":\"llama3:8b\",\"stream\":true,\"max_tokens\":10,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"Say hello\"}]}";

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final AtomicBoolean died = new AtomicBoolean();
    private final List<String> continuations = new ArrayList<>();
    private ProxyServer proxy;
    private SimpleMeterRegistry registry;
    private NodeTable table;
    /** Released at the end of each test: a node that hangs mid-answer waits on it. */
    private final CountDownLatch hung = new CountDownLatch(1);

    @AfterEach
    void tearDown() throws Exception {
        hung.countDown();
        if (proxy != null) {
            proxy.close();
        }
        for (AutoCloseable c : closing) {
            c.close();
        }
    }

    private static void chunk(OutputStream out, String data) throws IOException {
        byte[] b = data.getBytes(StandardCharsets.UTF_8);
        out.write((Integer.toHexString(b.length) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.write(b);
        out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    private static String event(String id, String delta, String finish) {
        return "data: {\"id\":\"" + id + "\",\"object\":\"chat.completion.chunk\",\"created\":" + (id.equals("A") ? 111 : 222)
                + ",\"model\":\"model-" + id + "\",\"choices\":[{\"index\":0,\"delta\":" + delta
                + ",\"logprobs\":null,\"finish_reason\":" + finish + "}]}\n\n";
    }

    /**
     * The first request anywhere streams "Hello", " wor", "ld " and then its node dies; a
     * continuation ({@code continue_final_message}) is answered with the rest by {@code rest}.
     */
    private RawNode node(boolean answersContinuations, String... rest) throws IOException {
        RawNode n = new RawNode((req, out) -> {
            String body = new String(req.body(), StandardCharsets.UTF_8);
            out.write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            if (!body.contains("continue_final_message") && died.compareAndSet(false, true)) {
                chunk(out, event("A", "{\"role\":\"assistant\",\"content\":\"\"}", "null"));
                for (String t : new String[] {"Hello", " wor", "ld "}) {
                    chunk(out, event("A", "{\"content\":\"" + t + "\"}", "null"));
                }
                return false; // closed without the last chunk: the node died mid-answer
            }
            if (!answersContinuations) {
                return false;
            }
            synchronized (continuations) {
                continuations.add(body);
            }
            chunk(out, event("B", "{\"role\":\"assistant\",\"content\":\"\"}", "null"));
            for (String e : rest) {
                chunk(out, e);
            }
            chunk(out, "");
            return true;
        });
        closing.add(n);
        return n;
    }

    private void start(UnaryOperator<ProxyConfigBuilder> config, RawNode... nodes) {
        start(config, null, nodes);
    }

    /** Starts the proxy over {@code nodes} n1, n2, ... of the given backends ({@code null}: all vLLM). */
    private void start(UnaryOperator<ProxyConfigBuilder> config, String[] backends, RawNode... nodes) {
        table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        for (int i = 0; i < nodes.length; i++) {
            table.apply(Heartbeat.builder("n" + (i + 1), nodes[i].url()).instance("i1").seq(1L).state(NodeState.UP)
                    .backend(backends == null ? "vllm" : backends[i]).intervalMs(60_000).models(List.of("llama3:8b")).build(), Instant.now());
        }
        table.publish();
        ProxyConfig c = config.apply(new ProxyConfigBuilder()).build();
        PassiveHealth health = new PassiveHealth(Clock.systemUTC(), c.ejectAfter(), c.ejectFor(), Duration.ofMinutes(5));
        registry = new SimpleMeterRegistry();
        proxy = ProxyServer.start(c, table::snapshot, new RouteSelector(Strategy.ROUND_ROBIN.create()), health, health,
                new ProxyCounters(), new RequestMetrics(registry, Ticker.SYSTEM), Ticker.SYSTEM, new Draining(),
                Stages.Access.OPEN, null, Tracing.OFF);
    }

    /** Sends {@code body} as a chat completion and returns the SSE body the client read, to its end or the cut. */
    private String stream(String body) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n"
                    + "content-length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.UTF_8));
            InputStream in = s.getInputStream();
            assertThat(RawNode.line(in)).startsWith("HTTP/1.1 200");
            for (String h; (h = RawNode.line(in)) != null && !h.isEmpty(); ) {
                assertThat(h.toLowerCase()).doesNotStartWith("content-length");
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (int i = 0; i < 10_000; i++) {
                String size = RawNode.line(in);
                if (size == null || size.isEmpty()) {
                    break; // cut
                }
                int n = Integer.parseInt(size.trim(), 16);
                if (n == 0) {
                    break;
                }
                out.write(in.readNBytes(n));
                RawNode.line(in);
            }
            return out.toString(StandardCharsets.UTF_8);
        }
    }

    private static List<JsonNode> events(String sse) throws IOException {
        List<JsonNode> out = new ArrayList<>();
        for (String e : sse.split("\n\n")) {
            if (e.startsWith("data: {")) {
                out.add(JSON.readTree(e.substring(6)));
            }
        }
        return out;
    }

    private double migrations(String result) {
        return registry.counter("heartgate_stream_migrations_total", "result", result).count();
    }

    @Test
    void aStreamCutMidAnswerGoesOnFromAnotherNodeAsOneStream() throws Exception {
        String[] rest = {
            event("B", "{\"content\":\" from B\"}", "null"),
            event("B", "{\"content\":\" end\"}", "null"),
            event("B", "{\"content\":\"\"}", "\"stop\""),
            "data: {\"id\":\"B\",\"object\":\"chat.completion.chunk\",\"created\":222,\"model\":\"model-B\",\"choices\":[],"
                    + "\"usage\":{\"prompt_tokens\":20,\"total_tokens\":22,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n"};
        start(c -> c, node(true, rest), node(true, rest));

        String sse = stream(CHAT);

        List<JsonNode> events = events(sse);
        StringBuilder text = new StringBuilder();
        int roles = 0;
        for (JsonNode e : events) {
            assertThat(e.get("id").asText()).isEqualTo("A");
            assertThat(e.get("created").asInt()).isEqualTo(111);
            assertThat(e.get("model").asText()).isEqualTo("model-A");
            JsonNode delta = e.path("choices").path(0).path("delta");
            roles += delta.has("role") ? 1 : 0;
            text.append(delta.path("content").asText(""));
        }
        assertThat(text.toString()).as("the cut text ended in a space: the continuation's is not doubled")
                .isEqualTo("Hello world from B end");
        assertThat(roles).isEqualTo(1);
        JsonNode usage = events.get(events.size() - 1).get("usage");
        assertThat(usage.get("completion_tokens").asInt()).as("3 sent before the cut, 2 after").isEqualTo(5);
        assertThat(usage.get("prompt_tokens").asInt()).as("the second leg's 20, the first's estimated 20 - 3").isEqualTo(37);
        assertThat(sse.split("data: \\[DONE]", -1)).hasSize(2);
        assertThat(sse).endsWith("data: [DONE]\n\n");

        assertThat(continuations).hasSize(1);
        JsonNode asked = JSON.readTree(continuations.get(0));
        assertThat(asked.get("continue_final_message").asBoolean()).isTrue();
        assertThat(asked.get("add_generation_prompt").asBoolean()).isFalse();
        assertThat(asked.get("max_tokens").asInt()).as("10 less the 3 sent").isEqualTo(7);
        JsonNode last = asked.get("messages").get(asked.get("messages").size() - 1);
        assertThat(last.get("role").asText()).isEqualTo("assistant");
        assertThat(last.get("content").asText()).as("without the trailing whitespace servers trim").isEqualTo("Hello world");
        await().untilAsserted(() -> assertThat(migrations("continued")).isEqualTo(1));
    }

    @Test
    void aStreamWhoseNodeFallsSilentAndLeavesTheTableMovesWithoutWaitingForTheIdleTimeout() throws Exception {
        CountDownLatch leave = new CountDownLatch(1);
        RawNode.Script script = (req, out) -> {
            String body = new String(req.body(), StandardCharsets.UTF_8);
            out.write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            if (!body.contains("continue_final_message") && died.compareAndSet(false, true)) {
                chunk(out, event("A", "{\"role\":\"assistant\",\"content\":\"\"}", "null"));
                chunk(out, event("A", "{\"content\":\"Hello\"}", "null"));
                leave.countDown();
                try {
                    hung.await(30, TimeUnit.SECONDS); // its host is gone: the connection stays open and silent
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return false;
            }
            chunk(out, event("B", "{\"content\":\" there\"}", "\"stop\""));
            chunk(out, "data: [DONE]\n\n");
            chunk(out, "");
            return true;
        };
        RawNode first = new RawNode(script);
        RawNode second = new RawNode(script);
        closing.add(first);
        closing.add(second);
        start(c -> c.idleTimeout(Duration.ofMinutes(2)), first, second);
        Thread leaver = new Thread(() -> {
            try {
                leave.await();
                // The node that answered leaves the table, as its expiry or tombstone would make it.
                String gone = first.connections.get() > 0 ? "n1" : "n2";
                table.remove(gone);
                table.publish();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        leaver.start();

        String sse = stream(CHAT);

        leaver.join(5_000);
        StringBuilder text = new StringBuilder();
        for (JsonNode e : events(sse)) {
            text.append(e.path("choices").path(0).path("delta").path("content").asText(""));
        }
        assertThat(text.toString()).isEqualTo("Hello there");
        assertThat(sse).endsWith("data: [DONE]\n\n");
        assertThat(migrations("continued")).isEqualTo(1);
    }

    @Test
    void anEventCutInHalfNeverReachesTheClientAndTheContinuationFollowsTheLastWholeOne() throws Exception {
        RawNode.Script script = (req, out) -> {
            String body = new String(req.body(), StandardCharsets.UTF_8);
            out.write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            if (!body.contains("continue_final_message") && died.compareAndSet(false, true)) {
                String half = event("A", "{\"content\":\" wor\"}", "null");
                chunk(out, event("A", "{\"role\":\"assistant\",\"content\":\"\"}", "null")
                        + event("A", "{\"content\":\"Hello\"}", "null") + half.substring(0, 30));
                return false; // dies inside the third event
            }
            synchronized (continuations) {
                continuations.add(body);
            }
            chunk(out, event("B", "{\"content\":\" world\"}", "\"stop\""));
            chunk(out, "data: [DONE]\n\n");
            chunk(out, "");
            return true;
        };
        RawNode first = new RawNode(script);
        RawNode second = new RawNode(script);
        closing.add(first);
        closing.add(second);
        start(c -> c, first, second);

        String sse = stream(CHAT);

        assertThat(sse).doesNotContain("\"content\":\" wor\"");
        for (String e : sse.split("\n\n")) {
            assertThat(e).as("every event the client got is whole").matches("(?s)data: (\\{.*\\}|\\[DONE])");
        }
        StringBuilder text = new StringBuilder();
        for (JsonNode e : events(sse)) {
            text.append(e.path("choices").path(0).path("delta").path("content").asText(""));
        }
        assertThat(text.toString()).isEqualTo("Hello world");
        JsonNode asked = JSON.readTree(continuations.get(0));
        assertThat(asked.get("messages").get(1).get("content").asText()).isEqualTo("Hello");
    }

    @Test
    void aNodeWhoseServerCannotContinueIsPassedOverForOneThatCan() throws Exception {
        String[] rest = {event("B", "{\"content\":\"done\"}", "\"stop\""), "data: [DONE]\n\n"};
        RawNode first = node(true, rest);
        RawNode ollama = node(true, rest);
        RawNode third = node(true, rest);
        start(c -> c, new String[] {"vllm", "ollama", "vllm"}, first, ollama, third);

        String sse = stream(CHAT);

        assertThat(sse).endsWith("data: [DONE]\n\n");
        assertThat(continuations).hasSize(1);
        assertThat(ollama.seen.stream().filter(r -> new String(r.body(), StandardCharsets.UTF_8)
                .contains("continue_final_message"))).as("the Ollama node was never asked to continue").isEmpty();
        assertThat(migrations("continued")).isEqualTo(1);
    }

    @Test
    void aContinuationAnsweredWithoutAStreamIsReadAwayAndTheStreamCut() throws Exception {
        RawNode.Script script = (req, out) -> {
            String body = new String(req.body(), StandardCharsets.UTF_8);
            if (body.contains("continue_final_message")) {
                RawNode.respond(out, "200 OK", "", "{\"choices\":[]}");
                return true;
            }
            out.write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            chunk(out, event("A", "{\"content\":\"Hi\"}", "null"));
            return false;
        };
        RawNode first = new RawNode(script);
        RawNode second = new RawNode(script);
        closing.add(first);
        closing.add(second);
        start(c -> c, first, second);

        String sse = stream(CHAT);

        assertThat(sse).contains("Hi").doesNotContain("[DONE]").doesNotContain("choices\":[]");
        await().untilAsserted(() -> assertThat(migrations("failed")).isEqualTo(1));
    }

    @Test
    void withMigrationOffTheStreamIsCutAsBefore() throws Exception {
        start(c -> c.migrateStreams(0), node(true), node(true));

        String sse = stream(CHAT);

        assertThat(sse).doesNotContain("[DONE]").contains("ld ");
        assertThat(continuations).isEmpty();
        assertThat(migrations("continued")).isZero();
    }

    @Test
    void aStopSequenceAcrossTheCutEndsTheAnswerThere() throws Exception {
        String[] rest = {event("B", "{\"content\":\"STOP and more\"}", "null"), "data: [DONE]\n\n"};
        start(c -> c, node(true, rest), node(true, rest));

        String sse = stream(CHAT.replace("\"stream\":true", "\"stream\":true,\"stop\":[\"ld STOP\"]"));

        StringBuilder text = new StringBuilder();
        String finish = null;
        for (JsonNode e : events(sse)) {
            text.append(e.path("choices").path(0).path("delta").path("content").asText(""));
            if (e.path("choices").path(0).hasNonNull("finish_reason")) {
                finish = e.path("choices").path(0).get("finish_reason").asText();
            }
        }
        assertThat(text.toString()).isEqualTo("Hello world ");
        assertThat(finish).isEqualTo("stop");
        assertThat(sse).endsWith("data: [DONE]\n\n");
    }

    @Test
    void aNodeThatRefusesTheContinuationLeavesTheStreamCutAndCounted() throws Exception {
        RawNode.Script refusing = (req, out) -> {
            String body = new String(req.body(), StandardCharsets.UTF_8);
            if (body.contains("continue_final_message")) {
                RawNode.respond(out, "400 Bad Request", "", "{\"error\":{\"message\":\"no\"}}");
                return true;
            }
            out.write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            chunk(out, event("A", "{\"role\":\"assistant\",\"content\":\"\"}", "null"));
            chunk(out, event("A", "{\"content\":\"Hi\"}", "null"));
            return false;
        };
        RawNode first = new RawNode(refusing);
        RawNode second = new RawNode(refusing);
        closing.add(first);
        closing.add(second);
        start(c -> c, first, second);

        String sse = stream(CHAT);

        assertThat(sse).contains("Hi").doesNotContain("[DONE]").doesNotContain("no");
        await().untilAsserted(() -> assertThat(migrations("failed")).isEqualTo(1));
        assertThat(migrations("continued")).isZero();
    }
}
