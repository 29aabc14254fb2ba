package io.heartgate.scheduler;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.affinity.AffinityKeys;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.ResilienceConfig;
import io.heartgate.scheduler.routing.WarmFirst;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The scheduler's flags for how nodes are chosen: the strategy, warm first, and the damping that
 * holds flapping or freshly joined nodes back. A picocli mixin of {@link SchedulerMain}; each getter
 * validates (throwing {@link io.heartgate.protocol.InvalidSettingException} naming its setting).
 */
final class RoutingOptions {

    @Option(names = "--strategy", defaultValue = "${env:SCHEDULER_STRATEGY:-weighted}",
            description = "random, round-robin, weighted, least-connections, least-loaded, affinity "
                    + "[env SCHEDULER_STRATEGY] (default: weighted)")
    String strategy;

    @Option(names = "--affinity-key", defaultValue = "${env:SCHEDULER_AFFINITY_KEY:-" + AffinityKeys.DEFAULT_SOURCES + "}",
            description = "where the affinity strategy finds a request's key, sources tried in order: header:NAME, "
                    + "body:FIELD (a top-level field), prefix (the prompt's beginning) [env SCHEDULER_AFFINITY_KEY] "
                    + "(default: " + AffinityKeys.DEFAULT_SOURCES + ")")
    String affinityKey;

    @Option(names = "--affinity-prefix", defaultValue = "${env:SCHEDULER_AFFINITY_PREFIX:-2048}",
            description = "characters of the conversation, up to its first user message, that the prefix key hashes "
                    + "[env SCHEDULER_AFFINITY_PREFIX] (default: 2048)")
    int affinityPrefix;

    @Option(names = "--affinity-load-factor", defaultValue = "${env:SCHEDULER_AFFINITY_LOAD_FACTOR:-1.25}",
            description = "c: a key spills to the next node on the ring when its own has ceil(c x (total in flight + 1) "
                    + "/ nodes) in flight [env SCHEDULER_AFFINITY_LOAD_FACTOR] (default: 1.25)")
    double affinityLoadFactor;

    @Option(names = "--affinity-fallback", defaultValue = "${env:SCHEDULER_AFFINITY_FALLBACK:-least-loaded}",
            description = "the strategy for requests without an affinity key [env SCHEDULER_AFFINITY_FALLBACK] "
                    + "(default: least-loaded)")
    String affinityFallback;

    @Option(names = "--warm-first", arity = "0..1", fallbackValue = "true", defaultValue = "${env:SCHEDULER_WARM_FIRST:-true}",
            description = "send a request to the nodes holding its model in memory when any does, with every "
                    + "strategy; --warm-first=false turns it off [env SCHEDULER_WARM_FIRST] (default: true)")
    boolean warmFirst;

    @Option(names = "--warm-max-load", defaultValue = "${env:SCHEDULER_WARM_MAX_LOAD:-4}",
            description = "warm first gives way when every warm node has more than N requests in flight more than "
                    + "the least busy cold one [env SCHEDULER_WARM_MAX_LOAD] (default: 4)")
    int warmMaxLoad;

    @Option(names = "--flap-limit", defaultValue = "${env:SCHEDULER_FLAP_LIMIT:-4}",
            description = "a node that changes (UP/DOWN, joins/leaves) more than N times in --flap-window is held out "
                    + "of routing, for a back-off that doubles while it keeps flapping; 0 = off "
                    + "[env SCHEDULER_FLAP_LIMIT] (default: 4)")
    int flapLimit;

    @Option(names = "--flap-window", defaultValue = "${env:SCHEDULER_FLAP_WINDOW:-60s}",
            description = "the window flaps are counted in, and the first hold; a held node is released once steady "
                    + "for one window [env SCHEDULER_FLAP_WINDOW] (default: 60s)")
    Duration flapWindow;

    @Option(names = "--slow-start", defaultValue = "${env:SCHEDULER_SLOW_START:-0s}",
            description = "a node that joins or returns gets a share of new requests that grows from a tenth to its "
                    + "full share over this long, for servers that are slow until warm; 0s = off "
                    + "[env SCHEDULER_SLOW_START] (default: 0s)")
    Duration slowStart;

    /** Returns the strategy named by {@code --strategy}. */
    Strategy strategy() {
        return Strategy.parse(strategy);
    }

    /** Returns the affinity strategy's settings. */
    AffinityConfig affinity() {
        Strategy fallback;
        try {
            fallback = Strategy.parse(affinityFallback);
        } catch (InvalidSettingException e) {
            throw new InvalidSettingException("affinityFallback", e.problem());
        }
        return new AffinityConfig(AffinityKeys.parse(affinityKey, affinityPrefix), affinityLoadFactor, fallback);
    }

    /** Returns the flap-damping and slow-start settings. */
    ResilienceConfig resilience() {
        return new ResilienceConfig(flapLimit, flapWindow, slowStart);
    }

    /** Returns the warm-first settings. */
    WarmFirst warmFirst() {
        return new WarmFirst(warmFirst, warmMaxLoad);
    }
}
