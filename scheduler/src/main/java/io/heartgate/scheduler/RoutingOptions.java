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
 * validates (throwing {@link InvalidSettingException} naming its setting).
 */
final class RoutingOptions {

    @Option(names = "--strategy", paramLabel = "S", defaultValue = "${env:SCHEDULER_STRATEGY:-weighted}",
            description = {"balancing strategy [env SCHEDULER_STRATEGY] (default: weighted)",
                "Accepted: `random`, `round-robin`, `weighted`, `least-connections`, "
                    + "`least-loaded`, `affinity` (case-insensitive)"})
    String strategy;

    @Option(names = "--affinity-key", paramLabel = "LIST", defaultValue = "${env:SCHEDULER_AFFINITY_KEY:-" + AffinityKeys.DEFAULT_SOURCES + "}",
            description = {"where `affinity` finds a request's key, the first present winning: a request "
                    + "header (trimmed, not empty), a top-level string or number field of the JSON body, or "
                    + "`prefix`, a hash of the prompt's beginning; the default lists the session headers of "
                    + "Claude Code, Codex CLI, OpenCode and Open WebUI after `X-Session-Id` [env "
                    + "SCHEDULER_AFFINITY_KEY] (default: `" + AffinityKeys.DEFAULT_SOURCES + "`)",
                "Accepted: comma-separated sources, each once: `header:NAME`, `body:FIELD`, "
                    + "`prefix`"})
    String affinityKey;

    @Option(names = "--affinity-prefix", paramLabel = "N", defaultValue = "${env:SCHEDULER_AFFINITY_PREFIX:-2048}",
            description = {"characters the `prefix` key hashes: the conversation's messages in order (text, "
                    + "then role) through the first user message, or `system` then `prompt` for bodies without "
                    + "`messages` [env SCHEDULER_AFFINITY_PREFIX] (default: 2048)",
                "Accepted: 1 to 1048576"})
    int affinityPrefix;

    @Option(names = "--affinity-bound", paramLabel = "B", defaultValue = "${env:SCHEDULER_AFFINITY_BOUND:-wait}",
            description = {"what moves a key off its node: `wait` (sticky until saturated: the node is full, "
                    + "or, its capacity unknown, the wait of its prefill backlog reaches `--affinity-max-wait`; "
                    + "the key then moves to the node that would give the first token soonest, and stays) or "
                    + "`requests` (bounded loads: the node holds more than its share of requests in flight, "
                    + "`--affinity-load-factor`) [env SCHEDULER_AFFINITY_BOUND] (default: wait)",
                "Accepted: `wait`, `requests`"})
    String affinityBound;

    @Option(names = "--affinity-max-wait", paramLabel = "D", defaultValue = "${env:SCHEDULER_AFFINITY_MAX_WAIT:-1s}",
            description = {"under `--affinity-bound wait`, the wait of the prefill backlog on a key's node "
                    + "(this scheduler's uncached prompt tokens there not yet at their first token, over the "
                    + "node's prefill speed) at which the key moves [env SCHEDULER_AFFINITY_MAX_WAIT] (default: 1s)",
                "Accepted: `0s` to `10m`"})
    Duration affinityMaxWait;

    @Option(names = "--affinity-load-factor", paramLabel = "C", defaultValue = "${env:SCHEDULER_AFFINITY_LOAD_FACTOR:-1.25}",
            description = {"under `--affinity-bound requests`, a key passes its node by when the node has "
                    + "`ceil(C x (total in flight + 1) / nodes)` requests in flight (this scheduler's, over the "
                    + "candidates) [env SCHEDULER_AFFINITY_LOAD_FACTOR] (default: 1.25)",
                "Accepted: 1 to 100"})
    double affinityLoadFactor;

    @Option(names = "--affinity-fallback", paramLabel = "S", defaultValue = "${env:SCHEDULER_AFFINITY_FALLBACK:-least-loaded}",
            description = {"the strategy for requests without an affinity key [env "
                    + "SCHEDULER_AFFINITY_FALLBACK] (default: least-loaded)",
                "Accepted: any strategy but `affinity`"})
    String affinityFallback;

    @Option(names = "--warm-first", paramLabel = "BOOL", arity = "0..1", fallbackValue = "true", defaultValue = "${env:SCHEDULER_WARM_FIRST:-true}",
            description = {"requests naming a model go to the candidates holding it in memory: the "
                    + "heartbeat's loaded set, this scheduler's requests in flight that the node is loading the "
                    + "model for, or an answer for it on this scheduler less than two intervals before the node's "
                    + "latest heartbeat; vLLM-style servers count as always warm. With none warm, cold candidates "
                    + "with free memory for the model (GPU figures and model size, or no model loaded) are "
                    + "preferred. `/api/show` and model-management calls are no evidence [env SCHEDULER_WARM_FIRST] "
                    + "(default: true)",
                "Accepted: `true`, `false`"})
    boolean warmFirst;

    @Option(names = "--warm-max-load", paramLabel = "N", defaultValue = "${env:SCHEDULER_WARM_MAX_LOAD:-4}",
            description = {"warm first gives way (every candidate stays) when the least busy warm candidate "
                    + "has more than N requests in flight more than the least busy cold one [env "
                    + "SCHEDULER_WARM_MAX_LOAD] (default: 4)",
                "Accepted: 0 to 1000000"})
    int warmMaxLoad;

    @Option(names = "--flap-limit", paramLabel = "N", defaultValue = "${env:SCHEDULER_FLAP_LIMIT:-4}",
            description = {"a node with more than N changes within `--flap-window` is held out of routing; a "
                    + "change is the node starting or ceasing to be routable: `UP` to `DOWN` or back, joining as "
                    + "`UP`, leaving or expiring while `UP` (`DRAINING` keeps what the node was) [env "
                    + "SCHEDULER_FLAP_LIMIT] (default: 4)",
                "Accepted: 0 to 1000; 0 = off"})
    int flapLimit;

    @Option(names = "--flap-window", paramLabel = "D", defaultValue = "${env:SCHEDULER_FLAP_WINDOW:-60s}",
            description = {"the window changes are counted in and the first hold; each change while held "
                    + "doubles the hold (up to 32 windows); a held node is released once its hold has passed and it "
                    + "has been steady for one window [env SCHEDULER_FLAP_WINDOW] (default: 60s)",
                "Accepted: `1s` to `24h`"})
    Duration flapWindow;

    @Option(names = "--slow-start", paramLabel = "D", defaultValue = "${env:SCHEDULER_SLOW_START:-0s}",
            description = {"a node that joins or becomes routable again (heard from within the last 2 s or 2 "
                    + "intervals) gets a share of new requests growing linearly from 0.1 to 1 over D: each pick "
                    + "keeps it a candidate with that probability (all stay when every candidate is drawn out) [env "
                    + "SCHEDULER_SLOW_START] (default: `0s` (off))",
                "Accepted: `0s` to `24h`"})
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
        return new AffinityConfig(AffinityKeys.parse(affinityKey, affinityPrefix),
                AffinityConfig.Bound.parse(affinityBound), affinityMaxWait, affinityLoadFactor, fallback);
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
