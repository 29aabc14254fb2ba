package io.heartgate.scheduler.admission;

import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.FreeSlots;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.time.Ticker;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds the requests that found every node for their model at its capacity, in the scheduler
 * instead of on a GPU node: two {@link FairQueue}s per model (first attempts, and retries), bounded
 * together by {@code --max-queue}, with one wait limit ({@code --queue-timeout}). A request leaves
 * the moment a candidate has room: whenever a slot on a node of known capacity is given back
 * ({@link #slotFreed(Node)}), and on each sweep ({@link #sweep()}, which also sees heartbeats, joins and
 * ejections end), the queues are served one request at a time, the highest class first across
 * every model (models may share nodes), until no waiting request finds room.
 *
 * <p>Requests for a model with nothing queued never come here; checking that is one volatile read
 * while the whole queue is empty, and a read of a published set while other models' requests wait
 * (the uncontended path takes no lock and allocates nothing); so too the slot such a request gives
 * back, unless its node serves a model whose requests wait.
 * While some are queued, a new request for the same model joins the queue rather than taking a
 * slot ahead of them. Thread-safe: one lock, taken only while something waits.
 *
 * <p>A {@link Reserve} ({@code --reserve-slots N}) keeps the last free slots of a model's nodes
 * from callers flooding it while others who could use them came lately; once a class is held back
 * from them, no lower class of the model is served in that pass. This class decides who leaves and
 * when; {@link QueueExits} answers and counts each request that leaves.
 */
public final class GatewayQueue {

    /**
     * A request waiting in the queue. Its callbacks run under the queue's lock on whatever thread
     * freed a slot, swept, or queued the request that took its place: each must only hand its
     * outcome to the request's own event loop.
     */
    public interface Waiter {
        /** Returns what routing needs of the request. */
        RequestFacts facts();

        /** Returns the nodes the request was sent to already (a retry's), in order; empty at first. */
        List<String> tried();

        /** A candidate had room: the request goes to {@code route}, whose slot is claimed for it. */
        void routed(Route.To route);

        /** While it waited, every node for its model went away: answer {@code refusal}. */
        void refused(Route.Refused refusal);

        /**
         * It waited the whole wait limit, or a request of a higher class or of a caller with fewer
         * waiting took its place in the full queue: answer 503 {@code overloaded} with {@code message}
         * and {@code Retry-After}.
         */
        void overloaded(String message, int retryAfterSeconds);
    }

    private static final Logger log = LoggerFactory.getLogger(GatewayQueue.class);

    private final int maxPerModel;
    private final long timeoutNanos;
    private final Ticker ticker;
    private final Function<Waiter, Route> router;
    private final Reserve reserve;
    private final ReentrantLock lock = new ReentrantLock();
    private final Map<String, ModelQueue> byModel = new HashMap<>();
    /** The models with requests waiting, copied on write under the lock: read without it. */
    private volatile Set<String> queuedModels = Set.of();
    private volatile int waiting;
    private boolean again;
    private final QueueExits exits;

    /**
     * @param maxPerModel the most requests waiting per model; 0 refuses at once when all are full
     * @param timeout the longest a request waits
     * @param ticker the monotonic clock waits are measured on
     * @param router where a waiting request would go now: a route whose slot is claimed,
     *     {@link Route.Refused#FULL} while every candidate is full, or another refusal
     * @param registry where the queue's meters go
     */
    public GatewayQueue(int maxPerModel, Duration timeout, Ticker ticker, Function<Waiter, Route> router,
                        MeterRegistry registry) {
        this(maxPerModel, timeout, ticker, router, 0, w -> FreeSlots.UNBOUNDED, registry);
    }

    /**
     * As {@link #GatewayQueue(int, Duration, Ticker, Function, MeterRegistry)}, keeping the last
     * {@code reserveSlots} free slots of a model's nodes for callers that are not flooding it.
     *
     * @param reserveSlots free slots a flooding caller's request may not take; 0 for none
     * @param freeSlots the slots, free and in all, on the nodes a waiting request may go to now
     */
    public GatewayQueue(int maxPerModel, Duration timeout, Ticker ticker, Function<Waiter, Route> router,
                        int reserveSlots, Function<Waiter, FreeSlots> freeSlots, MeterRegistry registry) {
        this.reserve = new Reserve(reserveSlots, freeSlots, ticker);
        this.maxPerModel = maxPerModel;
        this.timeoutNanos = timeout.toNanos();
        this.ticker = ticker;
        this.router = router;
        this.exits = new QueueExits(registry, this, timeout);
    }

    /** Returns the requests waiting now. */
    public int depth() {
        return waiting;
    }

    /**
     * Returns each model's queue (by normalised name; {@code ""} for requests that name none) with
     * requests waiting now: for autoscaling signals, read once a second, never on the request path.
     */
    public Map<String, ModelWait> byModel() {
        Map<String, ModelWait> out = new HashMap<>();
        if (waiting != 0) {
            long now = ticker.nanos();
            lock.lock();
            try {
                byModel.forEach((model, q) -> q.waitAt(now).ifPresent(w -> out.put(model, w)));
            } finally {
                lock.unlock();
            }
        }
        return out;
    }

    /**
     * Says whether requests for {@code model} (normalised, or {@code null}) are waiting, so that a new
     * one queues behind them; one volatile read while nothing waits.
     */
    public boolean queued(String model) {
        return waiting != 0 && queuedModels.contains(key(model));
    }

    /**
     * Returns {@code route}, or {@link Route.Refused#FULL} after giving its slot back when it claimed
     * one on a node that serves a model whose requests wait (another model's, or first attempts a
     * retry would pass): the request then queues and the queue decides which goes first, so a lower
     * class never takes a freed slot ahead of a higher one by reaching it before the queue does. One
     * volatile read while nothing waits.
     */
    public Route unlessContended(Route route) {
        if (route instanceof Route.To to && to.lease().bounded() && waiting != 0 && servesWaiting(to.node())) {
            to.lease().release();
            return Route.Refused.FULL;
        }
        return route;
    }

    /**
     * Queues {@code w} for {@code caller} (an API key's name or a client address) in priority class
     * {@code priority}, then serves the queue at once (a slot may have come free meanwhile). When the
     * model's queue is full, a request that {@link LongestQueueDrop} names is answered 503 {@code
     * overloaded} to make room. Returns the ticket, or {@code null} when the queue is full and nothing
     * gives way: the request is to be answered 503 {@code overloaded} with {@link #retryAfterSeconds()}.
     */
    public FairQueue.Ticket<Waiter> enqueue(Waiter w, String caller, int priority) {
        lock.lock();
        try {
            String model = key(w.facts().model());
            ModelQueue q = modelQueue(model);
            reserve.arrived(w, caller, priority, q.fresh);
            FairQueue.Ticket<Waiter> out = null;
            if (q.full()) {
                // A slot may have come free: room without pushing anyone out, but only for requests
                // this one does not outrank (a lower class served ahead of it would invert the classes).
                serve(priority);
                q = modelQueue(model);
                if (q.full()) {
                    // Room left is the newcomer's (no request left that it does not outrank could use
                    // it): it goes at once, and no one is pushed out for it.
                    FairQueue.Ticket<Waiter> passed = routeAtOnce(q, w, caller, priority);
                    if (passed != null) {
                        tidy();
                        return passed;
                    }
                    out = LongestQueueDrop.choose(q.parts, caller, priority);
                    if (out != null) {
                        q.remove(out);
                    }
                }
            }
            FairQueue.Ticket<Waiter> t = q.full() ? null : q.partOf(w).offer(w, caller, priority, ticker.nanos());
            if (t == null) {
                tidy();
                exits.rejected();
                return null;
            }
            if (out == null) {
                waiting++;
            } else {
                exits.pushedOut(out.item(), ticker.nanos() - out.enqueuedNanos());
            }
            tidy();
            serve();
            return t;
        } finally {
            lock.unlock();
        }
    }

    /** Sends {@code w} where it would go now if a candidate has room; returns its ticket then, else {@code null}; under the lock. */
    private FairQueue.Ticket<Waiter> routeAtOnce(ModelQueue q, Waiter w, String caller, int priority) {
        if (priority < q.heldClass // the pass just run held a higher class back from the reserve
                || reserve.holdsBack(w, caller, priority, q.partOf(w).waitingOf(caller, priority) + 1, q.fresh)
                || !(route(w) instanceof Route.To to)) {
            return null; // full, or a refusal it is answered as it leaves the queue
        }
        exits.served(w, to, 0);
        return FairQueue.Ticket.passing(w, caller, priority, ticker.nanos());
    }

    /** Where {@code w} would go now; a router that throws is answered as unreachable. */
    private Route route(Waiter w) {
        try {
            return router.apply(w);
        } catch (RuntimeException e) {
            log.warn("Gateway queue could not route a waiting request; answering it as unreachable", e);
            return new Route.Refused(ErrorType.UPSTREAM_UNREACHABLE);
        }
    }

    /** Returns the queue of {@code model}, creating it; under the lock. */
    private ModelQueue modelQueue(String model) {
        return byModel.computeIfAbsent(model, m -> new ModelQueue(maxPerModel));
    }

    /** Takes out the request of {@code t}, whose client hung up; nothing when it already left. */
    public void cancel(FairQueue.Ticket<Waiter> t) {
        lock.lock();
        try {
            ModelQueue q = byModel.get(key(t.item().facts().model()));
            if (q != null && q.remove(t)) {
                waiting--;
                exits.gone(ticker.nanos() - t.enqueuedNanos());
                tidy();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * A slot on {@code node}, of known capacity, was given back: serve the queue if a request waits
     * for a model the node serves. Requests for a model with room thus take no lock while other
     * models' requests wait, unless their nodes are shared.
     */
    public void slotFreed(Node node) {
        if (waiting > 0 && servesWaiting(node)) {
            lock.lock();
            try {
                serve();
            } finally {
                lock.unlock();
            }
        }
    }

    private boolean servesWaiting(Node node) {
        for (String model : queuedModels) {
            if (model.isEmpty() || node.serves(model)) {
                return true;
            }
        }
        return false;
    }

    /** Answers the requests past the wait limit, then serves the queue; nothing while it is empty. */
    public void sweep() {
        if (waiting == 0) {
            return;
        }
        lock.lock();
        try {
            long now = ticker.nanos();
            for (ModelQueue q : new ArrayList<>(byModel.values())) {
                for (FairQueue<Waiter> part : List.of(q.fresh, q.retries)) {
                    part.expire(now, timeoutNanos, t -> {
                        waiting--;
                        exits.expired(t.item(), now - t.enqueuedNanos());
                    });
                }
            }
            tidy();
            serve();
        } finally {
            lock.unlock();
        }
    }

    /** Returns the seconds a client is told to wait before trying again ({@link RecentWait#retryAfterSeconds()}). */
    public int retryAfterSeconds() {
        return exits.retryAfterSeconds();
    }

    /**
     * Serves the queues one request at a time, always the next that should go of every model's first
     * attempts and retries ({@link QueueLane}): the highest priority class, then a retry before a
     * first attempt, then the oldest, until none finds room. Re-entered from a callback on the same
     * thread (tests run loops inline), it only asks the outer pass to go round again.
     */
    private void serve() {
        serve(Integer.MIN_VALUE);
    }

    /** As {@link #serve()}, but stops at the first request to go that is below class {@code lowestClass}. */
    private void serve(int lowestClass) {
        if (lock.getHoldCount() > 1) {
            again = true;
            return;
        }
        do {
            again = false;
            if (waiting == 0) {
                return;
            }
            List<QueueLane> lanes = new ArrayList<>();
            for (ModelQueue q : byModel.values()) {
                q.heldClass = Integer.MIN_VALUE;
                if (!q.retries.isEmpty()) {
                    lanes.add(new QueueLane(q, true));
                }
                if (!q.fresh.isEmpty()) {
                    lanes.add(new QueueLane(q, false));
                }
            }
            while (serveNext(lanes, lowestClass)) {
                // one request a round, the best of every lane's next
            }
            tidy();
        } while (again);
    }

    /**
     * Routes the best next request of {@code lanes} unless it is below class {@code lowestClass};
     * returns whether any lane still had one to try.
     */
    private boolean serveNext(List<QueueLane> lanes, int lowestClass) {
        QueueLane best = null;
        FairQueue.Ticket<Waiter> next = null;
        for (QueueLane lane : lanes) {
            FairQueue.Ticket<Waiter> t = lane.next();
            if (t != null && t.priority() >= lane.model.heldClass
                    && (next == null || QueueLane.before(t, lane.retries, next, best.retries))) {
                best = lane;
                next = t;
            }
        }
        if (best == null || next.priority() < lowestClass) {
            return false;
        }
        if (reserve.holdsBack(next.item(), next.caller(), next.priority(),
                best.part.waitingOf(next.caller(), next.priority()), best.model.fresh)) {
            best.holdBack(next);
            // No lower class of the model takes what it was held back from.
            best.model.heldClass = Math.max(best.model.heldClass, next.priority());
            return true;
        }
        Route r = route(next.item());
        if (r == Route.Refused.FULL) {
            best.full(next);
            return true;
        }
        best.take(next);
        waiting--;
        long waited = ticker.nanos() - next.enqueuedNanos();
        if (r instanceof Route.To to) {
            exits.served(next.item(), to, waited);
        } else {
            exits.refused(next.item(), (Route.Refused) r, waited);
        }
        return true;
    }

    /** Drops empty model queues and publishes which models have requests waiting; under the lock. */
    private void tidy() {
        byModel.values().removeIf(ModelQueue::isEmpty);
        if (!byModel.keySet().equals(queuedModels)) {
            queuedModels = Set.copyOf(byModel.keySet());
        }
    }

    /** Returns the key {@code model} (normalised, or {@code null} for requests without one) is queued under. */
    static String key(String model) {
        return model == null ? "" : model;
    }
}
