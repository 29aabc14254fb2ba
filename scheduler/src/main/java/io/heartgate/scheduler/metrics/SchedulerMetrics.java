package io.heartgate.scheduler.metrics;

import io.heartgate.protocol.NodeState;
import io.heartgate.protocol.Rule;
import io.heartgate.scheduler.discovery.DiscoveryStats;
import io.heartgate.scheduler.discovery.DiscoveryStatus;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.table.NodeTable;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * Binds the scheduler's own counters to Micrometer meters, read at scrape time (no work on the
 * heartbeat or request path): heartbeats by outcome and rejection rule, nodes by state, expirations,
 * tombstones, ejections, self-preservation, Kafka lag and contact age, and the requests in flight
 * to the table's nodes. The proxy binds its own counters ({@code ProxyCounters}) and per-request
 * histograms ({@code RequestMetrics}).
 * Gauges over the discovery status hold it strongly: Micrometer's default weak reference would let
 * the supplier lambda be collected and the gauge read NaN.
 */
public final class SchedulerMetrics {

    private SchedulerMetrics() {
    }

    /** Registers every meter on {@code registry}. */
    public static void bind(MeterRegistry registry, NodeTable table, DiscoveryStats stats,
                            Supplier<DiscoveryStatus> discovery, PassiveHealth health, Clock clock) {
        counter(registry, "heartgate_heartbeats_received", "Heartbeat records read from Kafka", stats,
                DiscoveryStats::receivedCount);
        counter(registry, "heartgate_heartbeats_accepted", "Heartbeats that joined or renewed a node", stats,
                DiscoveryStats::acceptedCount);
        for (NodeTable.Outcome o : new NodeTable.Outcome[] {NodeTable.Outcome.STALE_INSTANCE, NodeTable.Outcome.OLD_SEQ,
            NodeTable.Outcome.EXPIRED_ON_ARRIVAL, NodeTable.Outcome.REPLAYED}) {
            FunctionCounter.builder("heartgate_heartbeats_ignored", stats, s -> s.outcomeCount(o))
                    .description("Valid heartbeats ignored: from an old instance, an old seq, too old, or replayed")
                    .tag("reason", o.name().toLowerCase(Locale.ROOT)).register(registry);
        }
        for (Rule rule : Rule.values()) {
            FunctionCounter.builder("heartgate_heartbeats_rejected", stats, s -> s.rejectedCount(rule))
                    .description("Heartbeat records rejected, by the rule they broke")
                    .tag("reason", rule.label()).register(registry);
        }
        counter(registry, "heartgate_tombstones", "Tombstones received (agents leaving)", stats,
                DiscoveryStats::tombstoneCount);
        counter(registry, "heartgate_kafka_auth_failures", "Times Kafka refused discovery's credentials: the first "
                + "refusal and every retry", stats, DiscoveryStats::authRefusalCount);
        counter(registry, "heartgate_node_expirations", "Nodes expired for missing heartbeats", stats,
                DiscoveryStats::expirationCount);
        counter(registry, "heartgate_passive_ejections", "Nodes ejected after consecutive connect failures, or as stalled",
                health, PassiveHealth::ejectionCount);
        counter(registry, "heartgate_stalled_ejections", "Nodes ejected as stalled: no answer for --stall-timeout while "
                + "requests waited on them and other nodes answered", health, PassiveHealth::stallCount);
        Gauge.builder("heartgate_nodes_ejected", health, PassiveHealth::ejectedNow)
                .description("Nodes ejected now").register(registry);
        for (NodeState state : NodeState.values()) {
            Gauge.builder("heartgate_nodes", table,
                            t -> t.snapshot().nodes().stream().filter(n -> n.state() == state).count())
                    .description("Listed nodes by the state their agents report")
                    .tag("state", state.name()).register(registry);
        }
        Gauge.builder("heartgate_nodes_routable", table, t -> t.snapshot().routable().size())
                .description("Nodes that take new requests (UP)").register(registry);
        Gauge.builder("heartgate_self_preservation", discovery, d -> d.get().selfPreservation() ? 1 : 0)
                .description("1 while expiry is frozen because Kafka cannot be reached").strongReference(true).register(registry);
        Gauge.builder("heartgate_discovery_caught_up", discovery, d -> d.get().caughtUp() ? 1 : 0)
                .description("1 once the start-up catch-up with the topic is done").strongReference(true).register(registry);
        Gauge.builder("heartgate_kafka_consumer_lag", discovery, d -> d.get().lag())
                .description("Heartbeat records behind the end of the topic (-1: unknown)").strongReference(true)
                .register(registry);
        Gauge.builder("heartgate_kafka_last_contact_age", discovery, d -> {
            Instant last = d.get().lastContact();
            return last == null || last.equals(Instant.MIN) ? Double.NaN
                    : Duration.between(last, clock.instant()).toMillis() / 1000.0;
        }).description("Seconds since Kafka last answered").baseUnit("seconds").strongReference(true).register(registry);

        // Summed when scraped, from the per-node counts the balancers read: nothing per request.
        Gauge.builder("heartgate_proxy_in_flight", table, t -> {
            long n = 0;
            for (var node : t.snapshot().nodes()) {
                n += node.inFlight().get();
            }
            return n;
        }).description("Requests in flight to the nodes in the table now").register(registry);
    }

    private static <T> void counter(MeterRegistry registry, String name, String help, T obj, ToDoubleFunction<T> f) {
        FunctionCounter.builder(name, obj, f).description(help).register(registry);
    }
}
