package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.request.ErrorType;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts what the proxy did, by event and by the type of error it answered itself, and shows the
 * counts as Prometheus counters read at scrape time (nothing registered per request). Thread-safe:
 * every event loop counts into the same adders.
 */
public final class ProxyCounters {

    /** The events counted, each with its metric. */
    public enum Counter {
        REQUESTS("heartgate_proxy_requests", "Requests received by the proxy"),
        RETRIES("heartgate_proxy_retries", "Attempts retried on another node"),
        CLIENT_CANCELLATIONS("heartgate_proxy_client_cancellations", "Requests whose client hung up first"),
        CONNECT_FAILURES("heartgate_proxy_connect_failures", "Connections to nodes that failed"),
        UPSTREAM_RESETS("heartgate_proxy_upstream_resets", "Nodes that reset before answering"),
        STALE_CONNECTIONS("heartgate_proxy_stale_connections",
                "Pooled node connections found closed on reuse; the request went again on a new one"),
        OVERLOAD_ANSWERS("heartgate_proxy_overload_answers", "503/429 answers retried elsewhere"),
        TIMEOUTS("heartgate_proxy_timeouts", "First-byte and idle timeouts"),
        RESCUED("heartgate_proxy_rescued",
                "Requests moved to another node because theirs stopped being routable while they awaited its answer"),
        BROKEN_RESPONSES("heartgate_proxy_broken_responses",
                "Responses cut short because their node closed or reset the connection mid-response"),
        PANIC_ROUTES("heartgate_proxy_panic_routes",
                "Attempts sent to an ejected node because every candidate left was ejected"),
        REFUSED_CONNECTIONS("heartgate_proxy_refused_connections",
                "Client connections closed on accept because --max-connections were open");

        private final String metric;
        private final String help;

        Counter(String metric, String help) {
            this.metric = metric;
            this.help = help;
        }
    }

    private final LongAdder[] events = new LongAdder[Counter.values().length];
    private final LongAdder[] errors = new LongAdder[ErrorType.values().length];
    private final LongAdder activeStreams = new LongAdder();

    /** Creates zeroed counters. */
    public ProxyCounters() {
        for (int i = 0; i < events.length; i++) {
            events[i] = new LongAdder();
        }
        for (int i = 0; i < errors.length; i++) {
            errors[i] = new LongAdder();
        }
    }

    void add(Counter c) {
        events[c.ordinal()].increment();
    }

    void error(ErrorType type) {
        errors[type.ordinal()].increment();
    }

    void streamStarted() {
        activeStreams.increment();
    }

    void streamEnded() {
        activeStreams.decrement();
    }

    /** Returns how often {@code c} happened so far. */
    public long get(Counter c) {
        return events[c.ordinal()].sum();
    }

    /** Returns the proxy's own answers of one type so far. */
    public long errors(ErrorType type) {
        return errors[type.ordinal()].sum();
    }

    /** Returns the SSE and NDJSON streams being relayed now. */
    public long activeStreams() {
        return activeStreams.sum();
    }

    /** Registers every counter, the errors by type and the active-streams gauge on {@code registry}. */
    public void bindTo(MeterRegistry registry) {
        for (Counter c : Counter.values()) {
            FunctionCounter.builder(c.metric, this, p -> p.get(c)).description(c.help).register(registry);
        }
        for (ErrorType type : ErrorType.values()) {
            FunctionCounter.builder("heartgate_proxy_errors", this, p -> p.errors(type))
                    .description("Errors the proxy answered itself, by type").tag("type", type.wireName())
                    .register(registry);
        }
        Gauge.builder("heartgate_proxy_active_streams", this, ProxyCounters::activeStreams)
                .description("SSE and NDJSON streams being relayed now").register(registry);
    }
}
