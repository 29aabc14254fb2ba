package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.admission.FairQueue;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.TableSnapshot;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Chooses the node of a request's first attempt ({@link RouteSelector} over the table's current
 * snapshot and the passive-health view), or answers {@code no_upstream} or {@code model_not_found}.
 * When every candidate is at its capacity, or requests for the model already wait (or for another
 * model its node serves, so the queue orders the two), the request
 * waits in the {@link GatewayQueue} until a slot frees, and is answered 503 {@code overloaded}
 * with {@code Retry-After} when the queue is full, its wait runs out, or a later request takes its
 * place in the full queue; a request that waited gets its caller's key's request token back
 * ({@link RateLimits#giveBack}), as it is told to come back (one refused at once keeps it spent, so a
 * client looping on a full queue still meets its {@code rpm=}). The relay asks the same selector again for
 * each retry.
 */
final class Routing implements Stage {

    private final Supplier<TableSnapshot> table;
    private final RouteSelector selector;
    private final EjectionView health;
    private final GatewayQueue queue;
    private final RateLimits limits;

    Routing(Supplier<TableSnapshot> table, RouteSelector selector, EjectionView health, GatewayQueue queue,
            RateLimits limits) {
        this.table = table;
        this.selector = selector;
        this.health = health;
        this.queue = queue;
        this.limits = limits;
    }

    @Override
    public void handle(Call call) {
        if (call.route() != null) {
            call.proceed(); // pinned by an earlier stage (a management call for one node)
            return;
        }
        Route route = queue.queued(call.facts().model()) ? Route.Refused.FULL
                : queue.unlessContended(selector.select(table.get(), call.facts(), List.of(), health));
        if (route instanceof Route.To to) {
            call.route(to);
            call.proceed();
        } else if (route == Route.Refused.FULL) {
            wait(call);
        } else {
            refuse(call, (Route.Refused) route);
        }
    }

    private void wait(Call call) {
        Queued waiter = new Queued(call);
        String caller = call.facts().caller() != null ? call.facts().caller() : call.clientIp();
        FairQueue.Ticket<GatewayQueue.Waiter> ticket = queue.enqueue(waiter, caller, call.facts().priority());
        if (ticket == null) { // its request token stays spent: a client looping on a full queue meets its rpm=
            call.answer(overloaded("every node serving " + what(call.facts()) + " is at capacity and the gateway queue"
                    + " is full", queue.retryAfterSeconds()));
        } else if (ticket.queued()) {
            call.onCancel(() -> queue.cancel(ticket));
        }
    }

    private static String what(RequestFacts facts) {
        return facts.model() == null ? "any model" : "model '" + facts.displayModel() + "'";
    }

    /**
     * Answers a request that waited in the queue 503 {@code overloaded}; the caller's key gets back the
     * request token it spent on it.
     */
    private void answerOverloaded(Call call, String message, int retryAfterSeconds) {
        String key = call.facts().caller();
        Map<String, String> headers = key == null ? null : limits.giveBack(key);
        if (headers != null) {
            call.responseHeaders(headers);
        }
        call.answer(overloaded(message, retryAfterSeconds));
    }

    /** Returns the 503 {@code overloaded} answer with its {@code Retry-After}. */
    static Answer overloaded(String message, int retryAfterSeconds) {
        return Answer.error(ErrorType.OVERLOADED, message).withHeader("Retry-After", Integer.toString(retryAfterSeconds));
    }

    private static void refuse(Call call, Route.Refused refusal) {
        ErrorType error = refusal.error();
        call.answer(Answer.error(error, error == ErrorType.NO_UPSTREAM ? "no routable inference node"
                : "no routable node serves " + what(call.facts())));
    }

    /** A first attempt waiting in the queue; its outcomes hop to the request's event loop. */
    private final class Queued implements GatewayQueue.Waiter {
        private final Call call;

        Queued(Call call) {
            this.call = call;
        }

        @Override
        public RequestFacts facts() {
            return call.facts();
        }

        @Override
        public List<String> tried() {
            return List.of();
        }

        @Override
        public void routed(Route.To route) {
            call.later(() -> {
                call.onCancel(null);
                if (call.ended()) { // hung up as it left the queue: the slot goes to the next
                    route.unclaim();
                    queue.slotFreed(route.node());
                    return;
                }
                call.route(route);
                call.proceed();
            });
        }

        @Override
        public void refused(Route.Refused refusal) {
            call.later(() -> {
                call.onCancel(null);
                refuse(call, refusal);
            });
        }

        @Override
        public void overloaded(String message, int retryAfterSeconds) {
            call.later(() -> {
                call.onCancel(null);
                answerOverloaded(call, message, retryAfterSeconds);
            });
        }
    }
}
