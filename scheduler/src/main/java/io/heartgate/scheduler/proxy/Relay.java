package io.heartgate.scheduler.proxy;

import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.usage.UsageAccounting;
import io.heartgate.scheduler.usage.UsageReader;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * What the {@link Exchange}s of one event loop work with: the loop's pool and timeouts, the route
 * selector for retries, the retry policy, passive health to report to, and the counters and
 * metrics to record in. One per loop; event-loop confined apart from the thread-safe parts shared
 * by every loop.
 */
final class Relay {

    private final UpstreamPool pool;
    private final Timeouts timeouts;
    private final Supplier<TableSnapshot> table;
    private final RouteSelector selector;
    private final PassiveHealth health;
    private final EjectionView routing;
    private final RetryPolicy retry;
    private final Targets targets;
    private final ProxyCounters counters;
    private final RequestMetrics metrics;
    private final LongSupplier nanoTicker;
    private final long firstByteTimeoutMs;
    private static final long STALL_CHECK_MS = 1000;

    private final Rescues rescues;
    private final GatewayQueue queue;
    private final UsageAccounting usage;
    private final KeyLimits keyLimits;
    private final java.util.function.Consumer<Node> slotFreed;
    private final long stallTimeoutMs;
    private final List<Timeouts.Watched> stuck = new java.util.ArrayList<>();
    private long nextStallCheckMs;
    private TableSnapshot rescueCheckedAt;
    private long ejectionsCheckedAt = -1;

    Relay(UpstreamPool pool, Timeouts timeouts, Supplier<TableSnapshot> table, RouteSelector selector,
          PassiveHealth health, EjectionView routing, RetryPolicy retry, Targets targets, ProxyCounters counters, RequestMetrics metrics,
          LongSupplier nanoTicker, long firstByteTimeoutMs, long stallTimeoutMs, Rescues rescues, GatewayQueue queue,
          KeyLimits keyLimits) {
        this.rescues = rescues;
        this.usage = metrics.usage();
        this.keyLimits = keyLimits;
        this.slotFreed = n -> {
            if (queue.depth() != 0) {
                // The node as the table has it now: a heartbeat since the request was routed may have
                // made its capacity known or added a model whose requests wait.
                Node now = table.get().node(n.id());
                Node current = now != null ? now : n;
                if (current.capacity() > 0) {
                    queue.slotFreed(current);
                }
            }
        };
        this.queue = queue;
        this.stallTimeoutMs = stallTimeoutMs;
        this.pool = pool;
        this.timeouts = timeouts;
        this.table = table;
        this.selector = selector;
        this.health = health;
        this.routing = routing;
        this.retry = retry;
        this.targets = targets;
        this.counters = counters;
        this.metrics = metrics;
        this.nanoTicker = nanoTicker;
        this.firstByteTimeoutMs = firstByteTimeoutMs;
    }

    /** How often each loop runs {@link #sweep}, in ms. */
    static final long SWEEP_MS = 100;

    /**
     * Runs the loop's periodic work, every {@link #SWEEP_MS}: timeouts, the stall rule, the rescue of
     * requests on lost nodes, the pool's idle connections and the gateway queue's waits.
     */
    void sweep() {
        timeouts.sweep();
        checkStalls();
        rescueLost();
        pool.purge();
        queue.sweep();
    }

    /**
     * Moves the requests awaiting an answer from a node the table stopped routing (its heartbeat
     * says DOWN, it left or expired, or it was ejected while others are not) to other nodes, as a
     * connect failure would: nothing reached their clients yet. Cheap when nothing changed: it looks
     * only when the table's snapshot or the ejections are new. Called by the loop's sweep.
     */
    void rescueLost() {
        TableSnapshot snapshot = table.get();
        long ejections = health.ejectionCount();
        if (snapshot != rescueCheckedAt || ejections != ejectionsCheckedAt) {
            rescueCheckedAt = snapshot;
            ejectionsCheckedAt = ejections;
            // Gone or DOWN: move whatever waits there. Only held out (ejected, flapping): move a
            // request only where another candidate for its model is not held out too.
            Map<String, Integer> moved = timeouts.rescue(id -> whyLost(snapshot, id) != null,
                    id -> isHeldOnly(snapshot, id));
            moved.forEach((id, n) -> rescues.moved(id, n, whyLost(snapshot, id), timeouts.nowMs()));
        }
        rescues.flush(timeouts.nowMs());
    }

    /**
     * Applies the stall rule, at most once a second: a node that sent this scheduler nothing (no
     * response head, no chunk) for the stall timeout, while one of this loop's streaming requests
     * has waited that whole time for its first token, and another node serving that request's model
     * answered in that time or has nothing in flight (it is not slow too: a model slow everywhere is
     * no stall), is ejected as stalled; {@link #rescueLost} then moves what waits on it. A node that
     * answered anything in that window is busy (its own queue), not stalled; a non-streaming request
     * is no evidence, since its answer comes whole, after however long its generation takes; nor is a
     * request sent while its node had to load its model (warm first tracks that), since loading a
     * large model takes longer than the stall timeout. Called by the loop's sweep.
     */
    void checkStalls() {
        long now = timeouts.nowMs();
        if (stallTimeoutMs <= 0 || now < nextStallCheckMs) {
            return;
        }
        nextStallCheckMs = now + STALL_CHECK_MS;
        long since = now - stallTimeoutMs;
        TableSnapshot snapshot = table.get();
        stuck.clear();
        timeouts.awaitingSince(since, stuck::add);
        for (Timeouts.Watched w : stuck) {
            String id = w.awaitedNode();
            Node n = id == null ? null : snapshot.node(id);
            if (n == null || n.inFlight().lastAnswerMs() >= since || routing.isEjected(id) || !w.streams()
                    || w.waitsForLoad()) {
                continue;
            }
            Node peer = unstuckPeer(snapshot, id, w.model(), since);
            if (peer != null) {
                health.stalled(id, "no first token for " + stallTimeoutMs / 1000 + " s to streams waiting on it while "
                        + peer.id() + (w.model() == null ? "" : ", serving " + w.model() + ",")
                        + (peer.inFlight().lastAnswerMs() >= since ? " answered" : " had nothing to do"));
            }
        }
        stuck.clear();
    }

    /**
     * Returns a node other than {@code id} serving {@code model} that answered at or after
     * {@code since}, or has no request of this scheduler in flight (every client may be waiting on
     * the stalled node), or null when every one is as silent and busy.
     */
    private static Node unstuckPeer(TableSnapshot snapshot, String id, String model, long since) {
        for (Node other : snapshot.candidates(model)) {
            if (!other.id().equals(id) && (other.inFlight().lastAnswerMs() >= since || other.inFlight().get() == 0)) {
                return other;
            }
        }
        return null;
    }

    private String whyLost(TableSnapshot snapshot, String id) {
        Node n = snapshot.node(id);
        if (n == null) {
            return "it left the table: a tombstone, or it expired";
        }
        if (n.state() == NodeState.DOWN) {
            return "its heartbeat says DOWN";
        }
        if (routing.isEjected(id)) {
            return routing.ejection(id).map(io.heartgate.scheduler.status.Ejection::describe)
                    .orElse("it was ejected or is held for flapping");
        }
        return null;
    }

    private static boolean isHeldOnly(TableSnapshot snapshot, String id) {
        Node n = snapshot.node(id);
        return n != null && n.state() != NodeState.DOWN;
    }

    /** Returns whether a node this request has not tried, and that is not held out, serves its model. */
    boolean healthyUntriedLeft(RequestFacts facts, List<String> tried) {
        for (Node n : table.get().candidates(facts.model())) {
            if (!tried.contains(n.id()) && !routing.isEjected(n.id())) {
                return true;
            }
        }
        return false;
    }

    /**
     * Returns where a retry of a request goes, leaving out the nodes it tried; {@link Route.Refused#FULL}
     * also when the slot found could serve requests waiting in the queue, which then says whether the
     * retry goes first.
     */
    Route reroute(RequestFacts facts, List<String> tried) {
        return queue.unlessContended(selector.select(table.get(), facts, tried, routing));
    }

    /** Returns whether a node this request has not tried could take it now. */
    boolean untriedLeft(RequestFacts facts, List<String> tried) {
        return RouteSelector.untriedLeft(table.get(), facts, tried);
    }

    /**
     * Starts an attempt of {@code attempts} for {@code facts} on the node of {@code route}, counting a
     * panic-mode route, and, with warm-first, the model the node has to load for it.
     */
    void begin(Attempts attempts, Route.To route, RequestFacts facts) {
        if (route.panic()) {
            counters.add(ProxyCounters.Counter.PANIC_ROUTES);
        }
        attempts.begin(route, targets, selector.loadingFor(route.node(), facts));
    }

    /** Returns where answers and the tokens they used are counted, shared by every loop. */
    UsageAccounting usage() {
        return usage;
    }

    /**
     * Counts the tokens a node reported for a request of {@code caller} (an API key's name, or
     * {@code null}) for {@code model}, and charges them to the key's tokens per minute.
     */
    void used(String caller, String model, UsageReader.Usage used) {
        if (used == null) {
            return; // not counted, or the answer reported nothing
        }
        usage.used(caller, model, used);
        if (caller != null) {
            keyLimits.charge(caller, used.total());
        }
    }

    /** Returns the per-key limits, told what exchanges learn after the stages. */
    KeyLimits keyLimits() {
        return keyLimits;
    }

    /** Returns what an attempt tells when it gives back a slot on a node of known capacity: one object for every exchange. */
    java.util.function.Consumer<Node> slotFreed() {
        return slotFreed;
    }

    /** Returns the gateway queue, shared by every loop. */
    GatewayQueue queue() {
        return queue;
    }

    UpstreamPool pool() {
        return pool;
    }

    Timeouts timeouts() {
        return timeouts;
    }

    PassiveHealth health() {
        return health;
    }

    RetryPolicy retry() {
        return retry;
    }

    ProxyCounters counters() {
        return counters;
    }

    RequestMetrics metrics() {
        return metrics;
    }

    long nanoTime() {
        return nanoTicker.getAsLong();
    }

    long firstByteTimeoutMs() {
        return firstByteTimeoutMs;
    }

    /** Notes that {@code node} answered a request for {@code facts} with a success head: warm-first's evidence. */
    void answeredWell(Node node, RequestFacts facts) {
        selector.answered(node, facts);
    }

    /** Notes that {@code node} sent a response head or chunk just now: the stall rule's evidence. */
    void answeredBy(Node node) {
        node.inFlight().answered(timeouts.nowMs());
    }
}
