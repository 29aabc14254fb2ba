package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.config.TracingConfig;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import io.opentelemetry.proto.trace.v1.Status;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.GZIPInputStream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Traces end to end: a scheduler with {@code --otlp-endpoint} pointing at an OTLP/HTTP receiver
 * started here (which decodes the protobuf the exporter sends), two nodes of which the first to be
 * asked answers 503, and one streamed request with the caller's own {@code traceparent}: the
 * receiver gets the server span under the caller's trace, two attempt spans under it, and each
 * node got the {@code traceparent} of its own attempt.
 */
@ExtendWith(KafkaExtension.class)
class TracingIT {

    private static final String KEY = "hg-traced-0123456789";
    private static final String CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String CALLER_SPAN = "00f067aa0ba902b7";
    private static final String MODEL = "llama3:8b";

    @TempDir
    Path dir;

    private Cluster cluster;
    private HttpServer receiver;
    private final List<Span> spans = new CopyOnWriteArrayList<>();
    private final List<String> services = new CopyOnWriteArrayList<>();
    private final List<HttpServer> nodes = new CopyOnWriteArrayList<>();
    /** What each node was sent: node id, then the traceparent it got. */
    private final List<String[]> received = new CopyOnWriteArrayList<>();
    private final AtomicInteger requests = new AtomicInteger();

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        receiver.createContext("/v1/traces", this::export);
        receiver.start();
        cluster = new Cluster(kafka.bootstrapServers());
        for (String id : List.of("gpu-a", "gpu-b")) {
            HttpServer node = node(id);
            cluster.heartbeat(id, "http://127.0.0.1:" + node.getAddress().getPort(), b -> b.models(List.of(MODEL)));
        }
        Path keys = Files.writeString(dir.resolve("api-keys"), "team-a " + ApiKeys.hash(KEY) + "\n");
        cluster.startScheduler(c -> c
                .security(new SecurityConfig(keys, null, null, false, null, null, null, null, null))
                .tracing(new TracingConfig("http://127.0.0.1:" + receiver.getAddress().getPort(), null,
                        Map.of("OTEL_BSP_SCHEDULE_DELAY", "50", "OTEL_SERVICE_NAME", "gateway-under-test"))));
        cluster.awaitRoutable(2);
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
        receiver.stop(0);
        nodes.forEach(n -> n.stop(0));
    }

    @Test
    void aStreamedRequestThroughTwoAttemptsGivesTheServerSpanTwoAttemptSpansAndEachNodeItsTraceparent()
            throws Exception {
        HttpResponse<String> answer = cluster.http.send(HttpRequest.newBuilder(cluster.proxy("/v1/chat/completions"))
                .timeout(Duration.ofSeconds(30)).header("authorization", "Bearer " + KEY)
                .header("content-type", "application/json")
                .header("traceparent", "00-" + CALLER_TRACE + "-" + CALLER_SPAN + "-01")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + MODEL + "\",\"stream\":true,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(answer.statusCode()).isEqualTo(200);
        assertThat(answer.body()).contains("data: [DONE]");

        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> spans.size() >= 3);
        assertThat(services).containsOnly("gateway-under-test");
        Span server = only(Span.SpanKind.SPAN_KIND_SERVER);
        List<Span> attempts = spans.stream().filter(s -> s.getKind() == Span.SpanKind.SPAN_KIND_CLIENT)
                .sorted((x, y) -> Long.compare(attr(x, "heartgate.attempt").getIntValue(),
                        attr(y, "heartgate.attempt").getIntValue())).toList();
        assertThat(attempts).hasSize(2);

        // The server span: under the caller's trace, with the GenAI attributes and the usage counted.
        assertThat(hex(server.getTraceId())).isEqualTo(CALLER_TRACE);
        assertThat(hex(server.getParentSpanId())).isEqualTo(CALLER_SPAN);
        assertThat(server.getName()).isEqualTo("POST /v1/chat/completions");
        assertThat(attr(server, "gen_ai.operation.name").getStringValue()).isEqualTo("chat");
        assertThat(attr(server, "gen_ai.request.model").getStringValue()).isEqualTo(MODEL);
        assertThat(attr(server, "gen_ai.response.model").getStringValue()).isEqualTo(MODEL);
        assertThat(attr(server, "gen_ai.usage.input_tokens").getIntValue()).isEqualTo(7);
        assertThat(attr(server, "gen_ai.usage.output_tokens").getIntValue()).isEqualTo(3);
        assertThat(attr(server, "gen_ai.response.time_to_first_chunk").getDoubleValue()).isPositive();
        assertThat(attr(server, "heartgate.api_key.name").getStringValue()).isEqualTo("team-a");
        assertThat(attr(server, "http.response.status_code").getIntValue()).isEqualTo(200);
        assertThat(attr(server, "heartgate.attempts").getIntValue()).isEqualTo(2);
        assertThat(attr(server, "server.address").getStringValue()).isEqualTo("127.0.0.1");
        String answeredBy = received.get(1)[0];
        assertThat(attr(server, "heartgate.node.id").getStringValue()).isEqualTo(answeredBy);
        assertThat(server.getStatus().getCode()).isNotEqualTo(Status.StatusCode.STATUS_CODE_ERROR);

        // Two attempts, children of the server span: the busy node's, then the answering one's.
        Span first = attempts.get(0);
        Span second = attempts.get(1);
        for (Span a : attempts) {
            assertThat(a.getTraceId()).isEqualTo(server.getTraceId());
            assertThat(a.getParentSpanId()).isEqualTo(server.getSpanId());
            assertThat(a.getName()).isEqualTo("chat " + MODEL);
            assertThat(attr(a, "gen_ai.request.model").getStringValue()).isEqualTo(MODEL);
            assertThat(attr(a, "server.port").getIntValue()).isPositive();
        }
        assertThat(attr(first, "heartgate.node.id").getStringValue()).isEqualTo(received.get(0)[0]);
        assertThat(attr(first, "error.type").getStringValue()).isEqualTo("overload_answer");
        assertThat(first.getStatus().getCode()).isEqualTo(Status.StatusCode.STATUS_CODE_ERROR);
        assertThat(attr(second, "heartgate.node.id").getStringValue()).isEqualTo(answeredBy);
        assertThat(attr(second, "http.response.status_code").getIntValue()).isEqualTo(200);
        assertThat(attr(second, "gen_ai.usage.output_tokens").getIntValue()).isEqualTo(3);
        assertThat(find(second, "error.type")).isEmpty();
        assertThat(received.get(0)[0]).isNotEqualTo(answeredBy);

        // Each node got the trace context of its own attempt, in the caller's trace.
        assertThat(received).hasSize(2);
        assertThat(received.get(0)[1]).isEqualTo("00-" + CALLER_TRACE + "-" + hex(first.getSpanId()) + "-01");
        assertThat(received.get(1)[1]).isEqualTo("00-" + CALLER_TRACE + "-" + hex(second.getSpanId()) + "-01");
    }

    /** A node on the JDK's HTTP server: the first request any node gets is answered 503, the rest streamed. */
    private HttpServer node(String id) throws IOException {
        HttpServer node = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        node.createContext("/v1/chat/completions", ex -> {
            try (ex) {
                ex.getRequestBody().readAllBytes();
                received.add(new String[] {id, ex.getRequestHeaders().getFirst("traceparent")});
                if (requests.getAndIncrement() == 0) {
                    byte[] busy = "{\"error\":\"busy\"}".getBytes(StandardCharsets.UTF_8);
                    ex.getResponseHeaders().set("content-type", "application/json");
                    ex.sendResponseHeaders(503, busy.length);
                    ex.getResponseBody().write(busy);
                    return;
                }
                ex.getResponseHeaders().set("content-type", "text/event-stream");
                ex.sendResponseHeaders(200, 0);
                OutputStream out = ex.getResponseBody();
                for (String word : List.of("Hel", "lo", "!")) {
                    out.write(("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"" + MODEL
                            + "\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + word + "\"}}]}\n\n")
                            .getBytes(StandardCharsets.UTF_8));
                    out.flush();
                }
                out.write(("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"" + MODEL
                        + "\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,"
                        + "\"total_tokens\":10}}\n\ndata: [DONE]\n\n").getBytes(StandardCharsets.UTF_8));
            }
        });
        node.start();
        nodes.add(node);
        return node;
    }

    /** The OTLP/HTTP receiver: decodes each export and keeps its spans. */
    private void export(HttpExchange ex) throws IOException {
        try (ex) {
            InputStream in = ex.getRequestBody();
            if ("gzip".equalsIgnoreCase(ex.getRequestHeaders().getFirst("content-encoding"))) {
                in = new GZIPInputStream(in);
            }
            ExportTraceServiceRequest request = ExportTraceServiceRequest.parseFrom(in.readAllBytes());
            for (ResourceSpans rs : request.getResourceSpansList()) {
                rs.getResource().getAttributesList().stream().filter(kv -> kv.getKey().equals("service.name"))
                        .forEach(kv -> services.add(kv.getValue().getStringValue()));
                for (ScopeSpans ss : rs.getScopeSpansList()) {
                    spans.addAll(ss.getSpansList());
                }
            }
            byte[] ok = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
            ex.getResponseHeaders().set("content-type", "application/x-protobuf");
            ex.sendResponseHeaders(200, ok.length == 0 ? -1 : ok.length);
            if (ok.length > 0) {
                ex.getResponseBody().write(ok);
            }
        }
    }

    private Span only(Span.SpanKind kind) {
        List<Span> of = spans.stream().filter(s -> s.getKind() == kind).toList();
        assertThat(of).hasSize(1);
        return of.get(0);
    }

    private static Optional<AnyValue> find(Span span, String key) {
        return span.getAttributesList().stream().filter(kv -> kv.getKey().equals(key)).map(KeyValue::getValue)
                .findFirst();
    }

    private static AnyValue attr(Span span, String key) {
        return find(span, key).orElseThrow(() -> new AssertionError("no attribute " + key + " on " + span.getName()
                + ": " + span.getAttributesList()));
    }

    private static String hex(ByteString bytes) {
        return HexFormat.of().formatHex(bytes.toByteArray());
    }
}
