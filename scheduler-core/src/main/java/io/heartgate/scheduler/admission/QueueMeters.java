package io.heartgate.scheduler.admission;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The gateway queue's meters: how long requests waited, how each left
 * ({@code heartgate_queue_exits{outcome}}), how many a full queue refused at once, and its depth.
 */
final class QueueMeters {

    final Counter served;
    final Counter expired;
    final Counter gone;
    final Counter refused;
    final Counter pushedOut;
    private final Counter full;
    private final Timer waits;

    QueueMeters(MeterRegistry registry, GatewayQueue queue) {
        waits = Timer.builder("heartgate_queue_wait")
                .description("Time requests waited in the gateway queue for a free slot, whatever the outcome")
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry);
        served = exits(registry, "served");
        expired = exits(registry, "timeout");
        gone = exits(registry, "client_gone");
        refused = exits(registry, "refused");
        pushedOut = exits(registry, "pushed_out");
        full = Counter.builder("heartgate_queue_rejected")
                .description("Requests answered 503 overloaded at once because their model's queue was full")
                .register(registry);
        Gauge.builder("heartgate_queue_depth", queue, GatewayQueue::depth)
                .description("Requests waiting in the gateway queue now").register(registry);
    }

    private static Counter exits(MeterRegistry registry, String outcome) {
        return Counter.builder("heartgate_queue_exits")
                .description("Requests that left the gateway queue, by how: served, timeout, client_gone, refused, pushed_out")
                .tag("outcome", outcome).register(registry);
    }

    /** A request left the queue {@code how} (one of the exit counters) after waiting {@code waitedNanos}. */
    void left(Counter how, long waitedNanos) {
        how.increment();
        waits.record(waitedNanos, TimeUnit.NANOSECONDS);
    }

    /** A full queue refused a request at once. */
    void rejected() {
        full.increment();
    }
}
