package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.routing.AffinityPick;
import io.heartgate.scheduler.tracing.RequestTrace;
import io.heartgate.scheduler.tracing.Tracing;
import io.heartgate.scheduler.usage.UsageAccounting;
import io.heartgate.scheduler.usage.UsageReader;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.EnumMap;
import java.util.Map;

/**
 * The tap through which what the proxy relays is counted: its counters, the per-node and per-key
 * metrics, the tokens each answer used and the per-key token limits they are charged to, and where
 * each request's trace begins. Exchanges and connections tell it what happened; none of them
 * reaches the meters themselves. Thread-safe; one for every event loop.
 */
final class Recorder {

    private final ProxyCounters counters;
    private final RequestMetrics metrics;
    private final UsageAccounting usage;
    private final KeyLimits keyLimits;
    private final Tracing tracing;
    private final Map<Migration.Result, io.micrometer.core.instrument.Counter> migrations = new EnumMap<>(Migration.Result.class);

    Recorder(ProxyCounters counters, RequestMetrics metrics, KeyLimits keyLimits, Tracing tracing) {
        this.counters = counters;
        this.tracing = tracing;
        this.metrics = metrics;
        this.usage = metrics.usage();
        this.keyLimits = keyLimits;
        for (Migration.Result r : Migration.Result.values()) {
            migrations.put(r, io.micrometer.core.instrument.Counter.builder("heartgate_stream_migrations_total").tag("result", r.label())
                    .description("Streams whose node failed mid-answer, by what followed: continued on another "
                            + "node, no_candidate, not_continuable, or failed on the next node too")
                    .register(metrics.registry()));
        }
    }

    /**
     * Begins the trace of {@code call}, under the caller's W3C trace context when it sent one;
     * with tracing off, {@link RequestTrace#NONE} and nothing read.
     */
    RequestTrace trace(Admitted call) {
        if (!tracing.on()) {
            return RequestTrace.NONE;
        }
        HttpHeaders h = call.request().headers();
        String model = call.facts().model() == null ? null : call.facts().displayModel();
        return tracing.request(call.endpoint(), call.request().method().name(), model,
                call.facts().caller(), h.get("traceparent"), h.get("tracestate"), call.startNanos());
    }

    /** Counts how a stream whose node failed mid-answer went on ({@link Migration}). */
    void migration(Migration.Result result) {
        migrations.get(result).increment();
    }

    /** Counts one occurrence of {@code counter}. */
    void count(Counter counter) {
        counters.add(counter);
    }

    /** Counts an answer of the proxy's own with {@code error}. */
    void error(ErrorType error) {
        counters.error(error);
    }

    /** Returns the counters, for what counts a node's failure ({@link NodeEvidence}). */
    ProxyCounters counters() {
        return counters;
    }

    /**
     * A request of {@code caller} (an API key's name, or {@code null}) ended with {@code status}
     * (0 when abandoned); {@code modelLabel} is its model as metrics label it, or {@code null} when
     * no node answered it.
     */
    void ended(String caller, String modelLabel, int status) {
        metrics.recordCaller(caller, status);
        usage.answered(caller, modelLabel, status);
    }

    /** A node answered: its status, latency and time to first byte, by node and model. */
    void relayed(String nodeId, int status, String modelLabel, long totalNanos, long firstByteNanos) {
        metrics.record(nodeId, status, modelLabel, totalNanos, firstByteNanos);
    }

    /** How the affinity strategy placed an answered request. */
    void affinity(AffinityPick how) {
        metrics.recordAffinity(how);
    }

    /**
     * Counts the tokens a node reported for a request of {@code caller} for {@code model}, and
     * charges them to the key's tokens per minute; nothing when it reported none.
     */
    void used(String caller, String model, UsageReader.Usage used) {
        if (used == null) {
            return;
        }
        usage.used(caller, model, used);
        if (caller != null) {
            keyLimits.charge(caller, used.total());
        }
    }

    /** Charges an estimate for a generation cut before its node reported usage ({@link KeyLimits#chargeCut}). */
    void chargeCut(String caller, FullHttpRequest req, long events, boolean sse) {
        keyLimits.chargeCut(caller, req.uri(), req.content().readableBytes(), events, sse);
    }

    /** Charges the prompt of a request whose client left before its answer began ({@link KeyLimits#chargeGoneBeforeHead}). */
    void chargeGoneBeforeHead(String caller, FullHttpRequest req, boolean streams) {
        keyLimits.chargeGoneBeforeHead(caller, req.uri(), req.content().readableBytes(), streams);
    }
}
