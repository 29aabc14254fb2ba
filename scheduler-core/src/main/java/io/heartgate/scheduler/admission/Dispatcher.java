package io.heartgate.scheduler.admission;

import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Lease;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * The one way a request, first attempt or retry, gets a node: asks the {@link RouteSelector} over the
 * table's current snapshot and the ejections, and when every candidate is full, or requests for
 * the model already wait (a first attempt queues behind them), or the slot found could serve a
 * request that waits ({@link GatewayQueue#unlessContended}), waits in the {@link GatewayQueue}. Every
 * outcome reaches the request's {@link Outcome} on its own event loop; an outcome that finds the
 * request gone gives its slot to the next. A request that waited and is then answered 503 {@code
 * overloaded} gets its key's request token back ({@link RateLimits#giveBack}), as it is told to come
 * back; one refused at once by a full queue keeps it spent, so a client looping on a full queue still
 * meets its {@code rpm=}. Slots come back here too ({@link #release}), so the queue hears of each.
 * Thread-safe; shared by every event loop.
 */
public final class Dispatcher {

    /** What a request is told, on its event loop. */
    public interface Outcome {

        /** The request goes to {@code route}, whose lease holds its slot. */
        void routed(Route.To route);

        /** No node can take it: answer {@code refusal} ({@code no_upstream}, {@code model_not_found}, ...). */
        void refused(Route.Refused refusal);

        /** Every candidate is full and the gateway queue is full too: answer 503 {@code overloaded} at once. */
        void queueFull(int retryAfterSeconds);

        /**
         * It waited in the queue and got no slot: answer 503 {@code overloaded} with {@code message} and
         * {@code Retry-After}; {@code limitHeaders} are its key's rate-limit headers after the request
         * token came back, or {@code null}.
         */
        void overloaded(String message, int retryAfterSeconds, Map<String, String> limitHeaders);

        /** Says whether the request is over (its client hung up) and no longer wants an outcome. */
        boolean gone();
    }

    private final Supplier<TableSnapshot> table;
    private final RouteSelector selector;
    private final EjectionView health;
    private final GatewayQueue queue;
    private final RateLimits limits;

    /**
     * @param table the table's current snapshot, read once per decision
     * @param health which nodes routing leaves out now
     * @param queue where requests wait while every candidate is full; built over {@link #route}
     * @param limits the keys' rate limits, which get a request token back after a wait that failed
     */
    public Dispatcher(Supplier<TableSnapshot> table, RouteSelector selector, EjectionView health, GatewayQueue queue,
                      RateLimits limits) {
        this.table = table;
        this.selector = selector;
        this.health = health;
        this.queue = queue;
        this.limits = limits;
    }

    /**
     * Finds a node for {@code facts}, leaving out the nodes in {@code tried} (empty on a first attempt).
     * Returns the request's place in the queue when it waits (for {@link #cancel}), else {@code null}
     * after telling {@code outcome}.
     *
     * @param fairnessKey whom the queue is fair between: the caller's key name, or its address
     * @param loop the request's event loop, where queued outcomes are told
     */
    public FairQueue.Ticket<GatewayQueue.Waiter> dispatch(RequestFacts facts, List<String> tried, String fairnessKey,
                                                         Executor loop, Outcome outcome) {
        Route route = tried.isEmpty() && queue.queued(facts.model()) ? Route.Refused.FULL
                : queue.unlessContended(route(facts, tried));
        if (route instanceof Route.To to) {
            outcome.routed(to);
            return null;
        }
        if (route != Route.Refused.FULL) {
            outcome.refused((Route.Refused) route);
            return null;
        }
        FairQueue.Ticket<GatewayQueue.Waiter> ticket = queue.enqueue(new Waiting(facts, tried, loop, outcome),
                fairnessKey, facts.priority());
        if (ticket == null) {
            outcome.queueFull(queue.retryAfterSeconds());
            return null;
        }
        return ticket.queued() ? ticket : null;
    }

    /** Where a request for {@code facts} would go now, leaving out {@code tried}: what the queue asks too. */
    public Route route(RequestFacts facts, List<String> tried) {
        return selector.select(table.get(), facts, tried, health);
    }

    /**
     * Returns whether a node serving the request's model is not in {@code tried}, ejected or not
     * (panic mode would try an ejected one); picks nothing.
     */
    public boolean untriedLeft(RequestFacts facts, List<String> tried) {
        return RouteSelector.untriedLeft(table.get(), facts, tried);
    }

    /** Returns whether a node serving the request's model is neither in {@code tried} nor held out. */
    public boolean healthyUntriedLeft(RequestFacts facts, List<String> tried) {
        for (Node n : table.get().candidates(facts.model())) {
            if (!tried.contains(n.id()) && !health.isEjected(n.id())) {
                return true;
            }
        }
        return false;
    }

    /** Takes a waiting request out of the queue: its client hung up. */
    public void cancel(FairQueue.Ticket<GatewayQueue.Waiter> ticket) {
        queue.cancel(ticket);
    }

    /**
     * Gives back what {@code lease} holds (once, however often called) and, when that freed a slot
     * of known capacity while requests wait, lets the queue serve the node as the table has it now:
     * a heartbeat since the request was routed may have made its capacity known or added a model
     * whose requests wait.
     */
    public void release(Lease lease) {
        if (lease.release() && queue.depth() != 0) {
            Node now = table.get().node(lease.node().id());
            Node current = now != null ? now : lease.node();
            if (current.capacity() > 0) {
                queue.slotFreed(current);
            }
        }
    }

    /** Returns the gateway queue this dispatcher waits in. */
    public GatewayQueue queue() {
        return queue;
    }

    /** A request in the queue; each outcome hops to its event loop, under the queue's lock until then. */
    private final class Waiting implements GatewayQueue.Waiter {
        private final RequestFacts facts;
        private final List<String> tried;
        private final Executor loop;
        private final Outcome outcome;

        Waiting(RequestFacts facts, List<String> tried, Executor loop, Outcome outcome) {
            this.facts = facts;
            this.tried = tried;
            this.loop = loop;
            this.outcome = outcome;
        }

        @Override
        public RequestFacts facts() {
            return facts;
        }

        @Override
        public List<String> tried() {
            return tried;
        }

        @Override
        public void routed(Route.To route) {
            loop.execute(() -> {
                if (outcome.gone()) { // hung up as it left the queue: the slot goes to the next
                    release(route.lease());
                } else {
                    outcome.routed(route);
                }
            });
        }

        @Override
        public void refused(Route.Refused refusal) {
            loop.execute(() -> {
                if (!outcome.gone()) {
                    outcome.refused(refusal);
                }
            });
        }

        @Override
        public void overloaded(String message, int retryAfterSeconds) {
            loop.execute(() -> {
                if (!outcome.gone()) {
                    String key = facts.caller();
                    outcome.overloaded(message, retryAfterSeconds, key == null ? null : limits.giveBack(key));
                }
            });
        }
    }
}
