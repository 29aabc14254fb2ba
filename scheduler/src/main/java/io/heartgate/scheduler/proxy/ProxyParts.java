package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.Dispatcher;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.proxy.stage.Stage;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.Tracing;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Assembles the proxy from its settings, once: the parts every event loop shares (stages, the
 * dispatcher and its gateway queue, rate limits, the taps) and, per loop, what that loop's
 * exchanges work with ({@link Loop}). The one place this wiring is written, for the server, the
 * in-memory cost meter and the tests alike; nothing on the request path asks it for anything.
 */
final class ProxyParts {

    /** One event loop's parts: its timeouts and pool, what opens its exchanges, and its periodic work. */
    record Loop(Timeouts timeouts, UpstreamPool pool, Exchanges exchanges, LoopSweep sweep) {
    }

    /** What the proxy is built over: the table, routing, passive health, where it counts and traces. */
    record Sources(Supplier<TableSnapshot> table, RouteSelector selector, PassiveHealth health, EjectionView routing,
                   ProxyCounters counters, RequestMetrics metrics, Ticker ticker, Tracing tracing) {
    }

    private final ProxyConfig config;
    private final Sources sources;
    private final List<Stage> stages;
    private final RequestFactsReader facts;
    private final GatewayQueue queue;
    private final Dispatcher dispatcher;
    private final RetryPolicy retry;
    private final Recorder recorder;
    private final Targets targets = new Targets();
    private final Rescues rescues = new Rescues();

    /** @param extraStages stages run before the standard ones (tests) */
    ProxyParts(ProxyConfig config, Sources sources, Stages.Access access, List<Stage> extraStages) {
        this.config = config;
        this.sources = sources;
        Supplier<TableSnapshot> table = sources.table();
        this.queue = new GatewayQueue(config.maxQueue(), config.queueTimeout(), sources.ticker(),
                w -> sources.selector().select(table.get(), w.facts(), w.tried(), sources.routing()),
                config.reserveSlots(), w -> RouteSelector.freeSlots(table.get(), w.facts(), sources.routing()),
                sources.metrics().registry());
        RateLimits limits = access.limits() != null ? access.limits() : new RateLimits(sources.ticker());
        this.dispatcher = new Dispatcher(table, sources.selector(), sources.routing(), queue, limits);
        List<Stage> all = new ArrayList<>(extraStages);
        all.addAll(Stages.standard(table, access, limits, sources.selector().responses()));
        this.stages = List.copyOf(all);
        this.facts = new RequestFactsReader(Stages.fieldsRead(stages), sources.selector().affinityKeys());
        this.retry = new RetryPolicy(config.retries(), config.migrateStreams());
        this.recorder = new Recorder(sources.counters(), sources.metrics(),
                new KeyLimits(limits, access.keys(), access.forceUsage()), sources.tracing());
    }

    /** Builds one event loop's parts, opening node connections with {@code connector}. */
    Loop loop(UpstreamPool.Connector connector, BooleanSupplier draining) {
        Timeouts timeouts = new Timeouts(sources.ticker(), config.firstByteTimeout().toMillis(),
                config.idleTimeout().toMillis());
        UpstreamPool pool = new UpstreamPool(connector, timeouts.coarse(), draining, targets);
        NodeEvidence evidence = new NodeEvidence(sources.health(), sources.selector(), sources.counters(),
                timeouts.coarse(), sources.ticker());
        Exchanges exchanges = new Exchanges(pool, timeouts, dispatcher, retry, evidence, recorder);
        LoopSweep sweep = new LoopSweep(timeouts,
                new StallRule(timeouts, sources.table(), sources.routing(), sources.health(),
                        config.stallTimeout().toMillis()),
                new LostNodes(timeouts, sources.table(), sources.routing(), sources.health(), rescues), pool, queue);
        return new Loop(timeouts, pool, exchanges, sweep);
    }

    /** Returns the handler of one new client connection on {@code loop}. */
    ClientConnection connection(Loop loop, BooleanSupplier draining) {
        return new ClientConnection(loop.exchanges(), stages, facts, recorder, loop.timeouts(),
                new ClientTimeouts(config.keepAliveTimeout().toMillis(), config.headerTimeout().toMillis(),
                        config.bodyTimeout().toMillis()), draining);
    }

    /** Returns the gateway queue every loop shares (its depth, for tests). */
    GatewayQueue queue() {
        return queue;
    }
}
