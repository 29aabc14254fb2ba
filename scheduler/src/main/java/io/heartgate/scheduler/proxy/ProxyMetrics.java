package io.heartgate.scheduler.proxy;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * Records each proxied request: a latency and a time-to-first-byte histogram by node, status class
 * and model, with percentile-friendly buckets. Labels stay bounded: nodes come from the table,
 * models are recorded only when some node serves them (else {@code other}), and there is no path or
 * request id label. Also keeps per-node request and error counts for the dashboard. Thread-safe.
 */
public final class ProxyMetrics {

    private final MeterRegistry registry;
    private final Map<String, Timer> durations = new ConcurrentHashMap<>();
    private final Map<String, Timer> firstBytes = new ConcurrentHashMap<>();
    private final Timer firstByteAll;
    private final Map<String, LongAdder[]> byNode = new ConcurrentHashMap<>();

    /** Creates the recorder over {@code registry}. */
    public ProxyMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.firstByteAll = Timer.builder("heartgate_proxy_first_byte_all")
                .description("Time to first byte over all nodes, for the dashboard's chart")
                .publishPercentiles(0.5, 0.99)
                .distributionStatisticExpiry(Duration.ofSeconds(30))
                .distributionStatisticBufferLength(3)
                .register(registry);
    }

    /** Records one finished request. */
    void record(String node, int status, String model, long durationNanos, long firstByteNanos) {
        String statusClass = status == 0 ? "none" : (status / 100) + "xx";
        String m = model == null ? "none" : model;
        String key = node + '\u0000' + statusClass + '\u0000' + m;
        durations.computeIfAbsent(key, k -> Timer.builder("heartgate_proxy_request_duration")
                .description("Proxied requests, from the request's arrival to the response's end")
                .tags("node", node, "status_class", statusClass, "model", m)
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry)).record(durationNanos, TimeUnit.NANOSECONDS);
        if (firstByteNanos > 0) {
            String fk = node + '\u0000' + m;
            firstBytes.computeIfAbsent(fk, k -> Timer.builder("heartgate_proxy_time_to_first_byte")
                    .description("Time from the request's arrival to the node's response head")
                    .tags("node", node, "model", m)
                    .publishPercentileHistogram()
                    .minimumExpectedValue(Duration.ofMillis(1))
                    .maximumExpectedValue(Duration.ofMinutes(10))
                    .register(registry)).record(firstByteNanos, TimeUnit.NANOSECONDS);
            firstByteAll.record(firstByteNanos, TimeUnit.NANOSECONDS);
        }
        LongAdder[] counts = byNode.computeIfAbsent(node, k -> new LongAdder[] {new LongAdder(), new LongAdder()});
        counts[0].increment();
        if (status >= 500 || status == 0) {
            counts[1].increment();
        }
    }

    /** Returns requests and errors (5xx or cut) proxied to {@code node} so far. */
    public long[] counts(String node) {
        LongAdder[] c = byNode.get(node);
        return c == null ? new long[] {0, 0} : new long[] {c[0].sum(), c[1].sum()};
    }

    /** Returns the median time to first byte over the last half minute, in ms, or NaN. */
    public double firstByteMedianMs() {
        var values = firstByteAll.takeSnapshot().percentileValues();
        return values.length == 0 ? Double.NaN : values[0].value(TimeUnit.MILLISECONDS);
    }

    /** Returns the total requests recorded. */
    public long total() {
        long n = 0;
        for (LongAdder[] c : byNode.values()) {
            n += c[0].sum();
        }
        return n;
    }

}
