package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.routing.AffinityPick;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Counts how the {@code affinity} strategy placed proxied responses: {@code
 * heartgate_affinity_total{result}} ({@code hit}, {@code spill}, {@code none}), and {@code
 * heartgate_affinity_spills_total{node}}, the node whose load bound sent a key on (nodes come from
 * the table, so the label stays bounded). Registered on first use, so a scheduler on another
 * strategy shows none. Thread-safe.
 */
final class AffinityMeters {

    private final MeterRegistry registry;
    private final Map<String, Counter> byResult = new ConcurrentHashMap<>();
    private final Map<String, Counter> spillsByNode = new ConcurrentHashMap<>();

    AffinityMeters(MeterRegistry registry) {
        this.registry = registry;
    }

    /** Counts one response placed as {@code how}. */
    void record(AffinityPick how) {
        Counter c = byResult.get(how.result());
        if (c == null) {
            c = byResult.computeIfAbsent(how.result(), r -> Counter.builder("heartgate_affinity")
                    .description("Proxied responses by how the affinity strategy placed them: hit (the key's own node), "
                            + "spill (a later node on the ring) or none (no key)")
                    .tag("result", r)
                    .register(registry));
        }
        c.increment();
        if (how.spilledFrom() != null) {
            spillsByNode.computeIfAbsent(how.spilledFrom(), n -> Counter.builder("heartgate_affinity_spills")
                    .description("Keys passed on to a later node because this node was at its load bound or capacity")
                    .tag("node", n)
                    .register(registry)).increment();
        }
    }

    /** Returns the responses counted per result, in the order hit, spill, none; empty before the first. */
    Map<String, Long> totals() {
        if (byResult.isEmpty()) {
            return Map.of();
        }
        Map<String, Long> out = new LinkedHashMap<>();
        for (String r : new String[] {"hit", "spill", "none"}) {
            Counter c = byResult.get(r);
            out.put(r, c == null ? 0L : (long) c.count());
        }
        return out;
    }
}
