package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.Dispatcher;
import io.heartgate.scheduler.admission.FairQueue;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Lease;
import io.heartgate.scheduler.routing.Route;
import java.util.Map;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where one {@link Exchange}'s attempts go: asks the {@link Dispatcher} for the first node and for
 * each retry alike (the gateway queue included), keeps the {@link Attempts} and the current
 * attempt's {@link Lease}, gives the lease back exactly once per attempt, and turns each refusal into
 * the answer's words. Event-loop confined.
 */
final class Placement implements Dispatcher.Outcome {

    private static final Logger log = LoggerFactory.getLogger(Placement.class);

    private final Exchange exchange;
    private final RequestFacts facts;
    private final String fairnessKey;
    private final Executor loop;
    private final Dispatcher dispatcher;
    private final NodeEvidence evidence;
    private final Recorder recorder;
    private final Attempts attempts = new Attempts();
    /** The request's place in the gateway queue while every node is full, else {@code null}. */
    private FairQueue.Ticket<GatewayQueue.Waiter> queued;

    /** @param fairnessKey whom the gateway queue is fair between: the caller's key name, or its address */
    Placement(Exchange exchange, RequestFacts facts, String fairnessKey, Executor loop, Dispatcher dispatcher,
              NodeEvidence evidence, Recorder recorder) {
        this.exchange = exchange;
        this.facts = facts;
        this.fairnessKey = fairnessKey;
        this.loop = loop;
        this.dispatcher = dispatcher;
        this.evidence = evidence;
        this.recorder = recorder;
    }

    /** Finds the first attempt's node: {@code pinned} when a stage pinned one, else the dispatcher's. */
    void first(Route.To pinned) {
        if (pinned != null) {
            routed(pinned);
        } else {
            queued = dispatcher.dispatch(facts, attempts.tried(), fairnessKey, loop, this);
        }
    }

    /** Finds a node the request has not tried yet, after the current attempt's slot was given back. */
    void retry() {
        recorder.count(Counter.RETRIES);
        queued = dispatcher.dispatch(facts, attempts.tried(), fairnessKey, loop, this);
    }

    @Override
    public void routed(Route.To route) {
        queued = null;
        if (route.panic()) {
            recorder.count(Counter.PANIC_ROUTES);
        }
        Target target = exchange.aim(route);
        attempts.begin(route, target, exchange.loadsModel() ? evidence.loadingFor(route.node(), facts) : null);
        exchange.send();
    }

    @Override
    public void refused(Route.Refused refusal) {
        queued = null;
        exchange.fail(refusal.error(), message(refusal.error()));
    }

    @Override
    public void queueFull(int retryAfterSeconds) {
        exchange.overloaded(attempts.count() == 0
                ? "every node serving " + Failures.what(facts) + " is at capacity and the gateway queue is full"
                : "every other node serving the model is at capacity and the gateway queue is full (after "
                        + attempts.lastFailure() + ")", retryAfterSeconds, null);
    }

    @Override
    public void overloaded(String message, int retryAfterSeconds, Map<String, String> limitHeaders) {
        queued = null;
        exchange.overloaded(message, retryAfterSeconds, limitHeaders);
    }

    @Override
    public boolean gone() {
        return exchange.placed();
    }

    /** The client hung up: a request waiting in the queue leaves it. */
    void cancel() {
        if (queued != null) {
            dispatcher.cancel(queued);
            queued = null;
        }
    }

    /** Gives back the current attempt's slot, once; the queue's trouble must not stop the exchange's end. */
    void release() {
        Lease lease = attempts.lease();
        if (lease != null) {
            try {
                dispatcher.release(lease);
            } catch (RuntimeException e) {
                log.warn("Gateway queue failed on a freed slot of node {}", lease.node().id(), e);
            }
        }
    }

    /** Returns whether a node this request has not tried could take it now. */
    boolean untriedLeft() {
        return dispatcher.untriedLeft(facts, attempts.tried());
    }

    /** Returns whether a node this request has not tried, and that is not held out, serves its model. */
    boolean healthyUntriedLeft() {
        return dispatcher.healthyUntriedLeft(facts, attempts.tried());
    }

    /** Returns the words of the proxy's own answer {@code error} after the attempts made. */
    String message(ErrorType error) {
        return Failures.message(error, facts, attempts, exchange.firstByteMs());
    }

    Attempts attempts() {
        return attempts;
    }
}
