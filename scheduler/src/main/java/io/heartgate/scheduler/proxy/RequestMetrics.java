package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.routing.AffinityPick;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.usage.TrafficView;
import io.heartgate.scheduler.usage.UsageAccounting;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * Records each proxied request: a latency and a time-to-first-byte histogram by node, status class
 * and model, with percentile-friendly buckets. Labels stay bounded: nodes come from the table, a
 * model is one its node lists ({@code other} on a node that serves any model, where the name is the
 * client's choice), and there is no path or request id label. Also keeps per-node request and error counts for the dashboard. Thread-safe.
 */
public final class RequestMetrics implements TrafficView {

    /** Index 0 is a response cut short (no status sent); 1 to 9 are 1xx to 9xx. */
    private static final String[] STATUS_CLASSES = {"none", "1xx", "2xx", "3xx", "4xx", "5xx", "6xx", "7xx", "8xx", "9xx"};

    private final MeterRegistry registry;
    private final FirstByteMedian firstByteAll;
    private final UsageAccounting usage;
    private final AffinityMeters affinity;
    // node -> meters; looked up per request by strings whose hashes are cached, so recording a
    // request builds no key and allocates nothing once its meters exist.
    private final Map<String, NodeMeters> byNode = new ConcurrentHashMap<>();
    // API key name -> a counter per status class, made on first use.
    private final Map<String, AtomicReferenceArray<Counter>> byCaller = new ConcurrentHashMap<>();

    /** One node's meters: per model, a duration timer per status class and a first-byte timer. */
    private static final class NodeMeters {
        final Map<String, AtomicReferenceArray<Timer>> durations = new ConcurrentHashMap<>();
        final Map<String, Timer> firstBytes = new ConcurrentHashMap<>();
        final LongAdder requests = new LongAdder();
        final LongAdder errors = new LongAdder();
    }

    /**
     * Creates the recorder over {@code registry}; {@code ticker} moves the dashboard's half-minute
     * window of times to first byte.
     */
    public RequestMetrics(MeterRegistry registry, Ticker ticker) {
        this.registry = registry;
        this.usage = new UsageAccounting(registry);
        this.affinity = new AffinityMeters(registry);
        this.firstByteAll = new FirstByteMedian(ticker);
    }

    /**
     * Records one finished request of {@code caller} (an API key's name, or {@code null} when the
     * proxy needs no key), whether a node or the proxy answered it.
     */
    void recordCaller(String caller, int status) {
        if (caller == null) {
            return;
        }
        int statusClass = statusClass(status);
        AtomicReferenceArray<Counter> counters = byCaller.get(caller); // no bin lock once the key is known
        if (counters == null) {
            counters = byCaller.computeIfAbsent(caller, k -> new AtomicReferenceArray<>(STATUS_CLASSES.length));
        }
        Counter c = counters.get(statusClass);
        if (c == null) {
            c = Counter.builder("heartgate_proxy_key_requests")
                    .description("Requests by the API key that sent them (its name) and status class")
                    .tags("key", caller, "status_class", STATUS_CLASSES[statusClass])
                    .register(registry);
            counters.set(statusClass, c);
        }
        c.increment();
    }

    private static int statusClass(int status) {
        return status < 100 || status >= 1000 ? 0 : status / 100;
    }

    /** Records one finished request. */
    void record(String node, int status, String model, long durationNanos, long firstByteNanos) {
        int statusClass = statusClass(status);
        String m = model == null ? "none" : model;
        NodeMeters meters = byNode.get(node);
        if (meters == null) {
            meters = byNode.computeIfAbsent(node, k -> new NodeMeters());
        }
        AtomicReferenceArray<Timer> byStatus = meters.durations.get(m);
        if (byStatus == null) {
            byStatus = meters.durations.computeIfAbsent(m, k -> new AtomicReferenceArray<>(STATUS_CLASSES.length));
        }
        Timer duration = byStatus.get(statusClass);
        if (duration == null) {
            // Two event loops may both get here: the registry hands both the same meter.
            duration = Timer.builder("heartgate_proxy_request_duration")
                    .description("Proxied requests, from the request's arrival to the response's end")
                    .tags("node", node, "status_class", STATUS_CLASSES[statusClass], "model", m)
                    .publishPercentileHistogram()
                    .minimumExpectedValue(Duration.ofMillis(1))
                    .maximumExpectedValue(Duration.ofMinutes(10))
                    .register(registry);
            byStatus.set(statusClass, duration);
        }
        duration.record(durationNanos, TimeUnit.NANOSECONDS);
        if (firstByteNanos > 0) {
            Timer firstByte = meters.firstBytes.get(m); // no capturing lambda once the meter exists
            if (firstByte == null) {
                firstByte = meters.firstBytes.computeIfAbsent(m, k -> Timer.builder("heartgate_proxy_time_to_first_byte")
                        .description("Time from the request's arrival to the node's response head")
                        .tags("node", node, "model", m)
                        .publishPercentileHistogram()
                        .minimumExpectedValue(Duration.ofMillis(1))
                        .maximumExpectedValue(Duration.ofMinutes(10))
                        .register(registry));
            }
            firstByte.record(firstByteNanos, TimeUnit.NANOSECONDS);
            firstByteAll.record(firstByteNanos);
        }
        meters.requests.increment();
        if (status >= 500 || status == 0) {
            meters.errors.increment();
        }
    }

    /** Counts a response the affinity strategy placed as {@code how}. */
    void recordAffinity(AffinityPick how) {
        affinity.record(how);
    }

    @Override
    public Map<String, Long> affinity() {
        return affinity.totals();
    }

    /** Returns the requests and tokens counted per API key and model. */
    public UsageAccounting usage() {
        return usage;
    }

    @Override
    public Map<String, UsageAccounting.KeyTotals> keyTotals() {
        return usage.byKey();
    }

    /** Returns the registry the proxy's other meters (the gateway queue's) go to. */
    MeterRegistry registry() {
        return registry;
    }

    @Override
    public long requests(String nodeId) {
        NodeMeters c = byNode.get(nodeId);
        return c == null ? 0 : c.requests.sum();
    }

    @Override
    public long errors(String nodeId) {
        NodeMeters c = byNode.get(nodeId);
        return c == null ? 0 : c.errors.sum();
    }

    @Override
    public double firstByteMedianMs() {
        return firstByteAll.medianMs();
    }

    @Override
    public long totalRequests() {
        long n = 0;
        for (NodeMeters c : byNode.values()) {
            n += c.requests.sum();
        }
        return n;
    }
}
