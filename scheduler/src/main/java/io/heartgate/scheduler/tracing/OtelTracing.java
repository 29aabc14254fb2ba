package io.heartgate.scheduler.tracing;

import io.heartgate.scheduler.config.TracingConfig;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.time.Ticker;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.opentelemetry.sdk.common.Clock;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Traces over the OpenTelemetry SDK, configured as its documentation says (the {@code OTEL_*}
 * variables, then the scheduler's flags) and exporting OTLP/HTTP in batches from the SDK's own
 * thread: an event loop only records. The caller's W3C trace context, when it sends one, is the
 * parent of the request's server span.
 */
public final class OtelTracing implements Tracing {

    private static final Logger log = LoggerFactory.getLogger(OtelTracing.class);
    private static final String SCOPE = "io.heartgate.scheduler";

    private final OpenTelemetrySdk sdk;
    private final Tracer tracer;
    private final Ticker ticker;
    private final Clock clock = Clock.getDefault();

    /** Traces through {@code sdk}, timing them on {@code ticker}, the scheduler's monotonic time. */
    OtelTracing(OpenTelemetrySdk sdk, Ticker ticker) {
        this.sdk = sdk;
        this.tracer = sdk.getTracer(SCOPE);
        this.ticker = ticker;
    }

    /** Returns the tracing {@code config} asks for: {@link Tracing#OFF} unless it is on. */
    public static Tracing start(TracingConfig config, Ticker ticker) {
        if (!config.on()) {
            return Tracing.OFF;
        }
        Map<String, String> properties = config.properties();
        SdkLogging.toSlf4j();
        OpenTelemetrySdk sdk = AutoConfiguredOpenTelemetrySdk.builder()
                .addPropertiesCustomizer(p -> properties)
                .disableShutdownHook()
                .build()
                .getOpenTelemetrySdk();
        log.info("Traces: {}", config.summary());
        return new OtelTracing(sdk, ticker);
    }

    /**
     * Returns tracing that samples every request and records and batches its spans as in
     * production, then drops them where the exporter would send them: what traces cost the request
     * path, for the in-memory cost meter.
     */
    public static Tracing dropping(Ticker ticker) {
        SpanExporter nowhere = new SpanExporter() {
            @Override
            public CompletableResultCode export(Collection<SpanData> spans) {
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode flush() {
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode shutdown() {
                return CompletableResultCode.ofSuccess();
            }
        };
        return new OtelTracing(OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                .addSpanProcessor(BatchSpanProcessor.builder(nowhere).build()).build()).build(), ticker);
    }

    @Override
    public boolean on() {
        return true;
    }

    @Override
    public RequestTrace request(Endpoint endpoint, String method, String model, String caller, String traceparent,
                                String tracestate, long startNanos) {
        Context parent = traceparent == null ? Context.root()
                : W3CTraceContextPropagator.getInstance().extract(Context.root(), new String[] {traceparent, tracestate},
                        Carrier.INSTANCE);
        return new OtelRequestTrace(this, parent, endpoint, method, model, caller, startNanos);
    }

    /** Returns the tracer every request's spans come from. */
    Tracer tracer() {
        return tracer;
    }

    /** Returns the time source of the requests' start times and waits. */
    Ticker ticker() {
        return ticker;
    }

    /** Returns the wall-clock instant, in ns since the epoch, of {@code nanos} on the ticker. */
    long epochNanos(long nanos) {
        return clock.now() - Math.max(0, ticker.nanos() - nanos);
    }

    @Override
    public void close() {
        sdk.getSdkTracerProvider().forceFlush().join(5, TimeUnit.SECONDS);
        sdk.shutdown().join(5, TimeUnit.SECONDS);
    }

    /** Reads the caller's {@code traceparent} and {@code tracestate}, carried as a pair. */
    private enum Carrier implements TextMapGetter<String[]> {
        INSTANCE;

        @Override
        public Iterable<String> keys(String[] carrier) {
            return Arrays.asList("traceparent", "tracestate");
        }

        @Override
        public String get(String[] carrier, String key) {
            if (carrier == null) {
                return null;
            }
            return "traceparent".equals(key) ? carrier[0] : "tracestate".equals(key) ? carrier[1] : null;
        }
    }
}
