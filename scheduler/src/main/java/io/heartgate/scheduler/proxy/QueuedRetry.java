package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * A retry waiting in the gateway queue because every other node for its model is at capacity, as a
 * first attempt would; each outcome hops to the exchange's event loop.
 */
final class QueuedRetry implements GatewayQueue.Waiter {

    private final Exchange exchange;
    private final Executor loop;

    QueuedRetry(Exchange exchange, Executor loop) {
        this.exchange = exchange;
        this.loop = loop;
    }

    @Override
    public RequestFacts facts() {
        return exchange.facts();
    }

    @Override
    public List<String> tried() {
        return exchange.tried();
    }

    @Override
    public void routed(Route.To route) {
        loop.execute(() -> exchange.slotFound(route));
    }

    @Override
    public void refused(Route.Refused refusal) {
        loop.execute(() -> exchange.queueGaveUp(refusal, null, 0));
    }

    @Override
    public void overloaded(String message, int retryAfterSeconds) {
        loop.execute(() -> exchange.queueGaveUp(null, message, retryAfterSeconds));
    }
}
