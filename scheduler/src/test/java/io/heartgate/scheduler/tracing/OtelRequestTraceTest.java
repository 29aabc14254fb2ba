package io.heartgate.scheduler.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.time.Ticker;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class OtelRequestTraceTest {

    private InMemorySpanExporter exported = InMemorySpanExporter.create();
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private OtelTracing tracing = tracing(Sampler.parentBased(Sampler.alwaysOn()));

    private OtelTracing tracing(Sampler sampler) {
        OpenTelemetrySdk sdk = OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                .setSampler(sampler).addSpanProcessor(SimpleSpanProcessor.create(exported)).build()).build();
        return new OtelTracing(sdk, Ticker.ofNanos(nanos::get));
    }

    @AfterEach
    void close() {
        tracing.close();
    }

    private static Node node(String id, int port) {
        return Node.of(Heartbeat.builder(id, "http://10.0.0." + port + ":" + (8000 + port)).models(List.of("m"))
                .backend("vllm").build(), Instant.EPOCH, new InFlight());
    }

    private RequestTrace begin() {
        return tracing.request(Endpoint.OLLAMA_GENERATE, "POST", "m", null, null, null, nanos.get());
    }

    private SpanData span(SpanKind kind, int index) {
        return exported.getFinishedSpanItems().stream().filter(s -> s.getKind() == kind).toList().get(index);
    }

    @Test
    void aWaitInTheGatewayQueueBecomesAnEventWithItsLength() {
        RequestTrace trace = begin();
        nanos.addAndGet(5_000_000);
        trace.dispatched(true);
        nanos.addAndGet(250_000_000);
        trace.attempt(node("a", 1));
        trace.ended(200, node("a", 1));
        SpanData server = span(SpanKind.SERVER, 0);
        assertThat(server.getName()).isEqualTo("POST /api/generate");
        assertThat(server.getAttributes().get(AttributeKey.stringKey("gen_ai.operation.name"))).isEqualTo("text_completion");
        assertThat(server.getEvents()).singleElement().satisfies(e -> {
            assertThat(e.getName()).isEqualTo("heartgate.queue.wait");
            assertThat(e.getAttributes().get(OtelRequestTrace.QUEUE_WAIT)).isEqualTo(0.25);
        });
        assertThat(span(SpanKind.CLIENT, 0).getAttributes().get(OtelRequestTrace.PROVIDER)).isEqualTo("vllm");
        assertThat(span(SpanKind.CLIENT, 0).getAttributes().get(OtelRequestTrace.SERVER_PORT)).isEqualTo(8001L);
    }

    @Test
    void aRequestNotDispatchedAtOnceThatEndsInTheQueueStillHasItsWait() {
        RequestTrace trace = begin();
        trace.dispatched(false);
        trace.dispatched(true);
        nanos.addAndGet(1_000_000_000);
        trace.ended(0, null);
        SpanData server = span(SpanKind.SERVER, 0);
        assertThat(server.getEvents()).singleElement()
                .satisfies(e -> assertThat(e.getAttributes().get(OtelRequestTrace.QUEUE_WAIT)).isEqualTo(1.0));
        assertThat(server.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(server.getAttributes().get(OtelRequestTrace.ERROR_TYPE)).isEqualTo("client_gone");
        assertThat(server.getAttributes().get(OtelRequestTrace.ATTEMPTS)).isZero();
    }

    @Test
    void aResendStaysInItsAttemptAndAMovedStreamIsMarkedOnTheNextOne() {
        RequestTrace trace = begin();
        trace.attempt(node("a", 1));
        trace.failed("STALE_CONNECTION", true);
        trace.answered(200);
        nanos.addAndGet(40_000_000);
        trace.firstChunk();
        nanos.addAndGet(40_000_000);
        trace.firstChunk(); // not the first: no change
        trace.failed("BROKE_OFF", false);
        trace.attempt(node("b", 2));
        trace.usage(12, 30);
        trace.ended(200, node("b", 2));
        trace.ended(500, null); // once only
        SpanData first = span(SpanKind.CLIENT, 0);
        SpanData second = span(SpanKind.CLIENT, 1);
        assertThat(first.getEvents()).singleElement().satisfies(e -> {
            assertThat(e.getName()).isEqualTo("heartgate.resent");
            assertThat(e.getAttributes().get(OtelRequestTrace.ERROR_TYPE)).isEqualTo("stale_connection");
        });
        assertThat(first.getAttributes().get(OtelRequestTrace.ERROR_TYPE)).isEqualTo("broke_off");
        assertThat(first.getAttributes().get(OtelRequestTrace.MOVED)).isNull();
        assertThat(second.getAttributes().get(OtelRequestTrace.MOVED)).isTrue();
        assertThat(second.getAttributes().get(OtelRequestTrace.ATTEMPT)).isEqualTo(2L);
        assertThat(second.getAttributes().get(OtelRequestTrace.OUTPUT_TOKENS)).isEqualTo(30L);
        SpanData server = span(SpanKind.SERVER, 0);
        assertThat(exported.getFinishedSpanItems()).hasSize(3);
        assertThat(server.getAttributes().get(OtelRequestTrace.FIRST_CHUNK)).isEqualTo(0.04);
        assertThat(server.getAttributes().get(OtelRequestTrace.INPUT_TOKENS)).isEqualTo(12L);
        assertThat(server.getAttributes().get(OtelRequestTrace.NODE)).isEqualTo("b");
        assertThat(server.getAttributes().get(OtelRequestTrace.RESPONSE_MODEL)).isEqualTo("m");
        assertThat(server.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    }

    @Test
    void aCutStreamIsAnErrorAndAnAttemptNeverSentSaysWhy() {
        RequestTrace trace = begin();
        trace.attempt(node("a", 1));
        trace.answered(200);
        trace.firstChunk();
        trace.failed("BROKE_OFF", false);
        trace.attempt(node("b", 2)); // its server cannot continue the stream: never sent
        trace.attempt(node("c", 3));
        trace.answered(200); // a continuation of another form: read away, and the client's stream cut
        trace.cut();
        trace.ended(200, node("a", 1));
        assertThat(exported.getFinishedSpanItems().stream().filter(s -> s.getKind() == SpanKind.CLIENT)
                .map(s -> s.getAttributes().get(OtelRequestTrace.ERROR_TYPE)))
                .containsExactly("broke_off", "not_continuable", "stream_cut");
        SpanData server = span(SpanKind.SERVER, 0);
        assertThat(server.getAttributes().get(OtelRequestTrace.ERROR_TYPE)).isEqualTo("stream_cut");
        assertThat(server.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(server.getAttributes().get(OtelRequestTrace.NODE)).isEqualTo("a");
    }

    @Test
    void aNodesAddressIsReadFromAnyUrlTheHeartbeatRulesAccept() {
        assertThat(OtelRequestTrace.hostAndPort("http://gpu_a.lan:8000/v1")).containsExactly("gpu_a.lan", "8000");
        assertThat(OtelRequestTrace.hostAndPort("HTTPS://gpu-a")).containsExactly("gpu-a", "443");
        assertThat(OtelRequestTrace.hostAndPort("http://[fd00::5]:11434")).containsExactly("fd00::5", "11434");
        assertThat(OtelRequestTrace.hostAndPort("http://[fd00::5]")).containsExactly("fd00::5", "80");
        assertThat(OtelRequestTrace.hostAndPort("http://10.0.0.5?x=1")).containsExactly("10.0.0.5", "80");
    }

    @Test
    void theServerSpanStartsWhenTheRequestArrived() {
        long arrived = nanos.get();
        nanos.addAndGet(3_000_000); // the stages took 3 ms
        RequestTrace trace = tracing.request(Endpoint.OPENAI_CHAT, "POST", "m", "team", null, null, arrived);
        nanos.addAndGet(7_000_000);
        trace.ended(200, null);
        SpanData server = span(SpanKind.SERVER, 0);
        assertThat(server.getEndEpochNanos() - server.getStartEpochNanos()).isBetween(3_000_000L, 1_000_000_000L);
        assertThat(server.getAttributes().get(OtelRequestTrace.API_KEY)).isEqualTo("team");
    }

    @Test
    void anUnsampledTraceSendsItsContextOnAsNotSampledAndExportsNothing() {
        tracing.close(); // and its exporter
        exported = InMemorySpanExporter.create();
        tracing = tracing(Sampler.parentBased(Sampler.traceIdRatioBased(0)));
        RequestTrace trace = begin();
        String traceparent = trace.attempt(node("a", 1));
        trace.ended(200, node("a", 1));
        assertThat(traceparent).matches("00-[0-9a-f]{32}-[0-9a-f]{16}-0[02]"); // not sampled (02: a random trace id)
        assertThat(exported.getFinishedSpanItems()).isEmpty();

        RequestTrace sampledByCaller = tracing.request(Endpoint.OPENAI_CHAT, "POST", "m", null,
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=x", nanos.get());
        assertThat(sampledByCaller.attempt(node("a", 1)))
                .matches("00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01");
        sampledByCaller.ended(200, null);
        assertThat(exported.getFinishedSpanItems()).hasSize(2);
    }

    @Test
    void offHandsOutTheEmptyTraceAndSendsNoContext() {
        RequestTrace none = Tracing.OFF.request(Endpoint.OPENAI_CHAT, "POST", "m", null, null, null, 0);
        assertThat(none).isSameAs(RequestTrace.NONE);
        assertThat(none.attempt(node("a", 1))).isNull();
        assertThat(Tracing.OFF.on()).isFalse();
    }
}
