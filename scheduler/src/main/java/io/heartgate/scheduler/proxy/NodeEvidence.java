package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Decision;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.time.Ticker;

/**
 * The tap through which what a node's answers say about it is told: to passive health (answered,
 * failed), to the stall rule (when it last sent anything) and to warm first (it answered a request
 * for a model it was cold for, so it holds the model now). Exchanges tell it; they never reach
 * those rooms themselves. One per event loop: the times come from the loop's coarse clock.
 */
final class NodeEvidence {

    private final PassiveHealth health;
    private final RouteSelector selector;
    private final ProxyCounters counters;
    private final Ticker clock;

    /** @param clock the loop's coarse clock */
    NodeEvidence(PassiveHealth health, RouteSelector selector, ProxyCounters counters, Ticker clock) {
        this.health = health;
        this.selector = selector;
        this.counters = counters;
        this.clock = clock;
    }

    /** Returns the model {@code node} has to load for a request of {@code facts}, as warm first tracks it, or {@code null}. */
    String loadingFor(Node node, RequestFacts facts) {
        return selector.loadingFor(node, facts);
    }

    /** {@code node} sent a response head: it is alive, and it answered just now. */
    void head(Node node) {
        node.inFlight().answered(clock.millis());
        health.succeeded(node.id());
    }

    /** {@code node} sent a chunk just now: the stall rule's evidence. */
    void chunk(Node node) {
        node.inFlight().answered(clock.millis());
    }

    /** {@code node} answered a request for {@code facts} with a success head: warm first's evidence. */
    void answeredWell(Node node, RequestFacts facts) {
        selector.answered(node, facts);
    }

    /**
     * An attempt on {@code node} failed with {@code failure}, which the retry policy answered with
     * {@code decision}: counted, logged and, where it holds against the node, told to passive health.
     * Returns the failure in words for the "every node failed" message, or {@code null}.
     */
    String failed(Failure failure, Decision decision, Node node, Throwable cause, String caller) {
        return Failures.record(counters, health, failure, decision, node, cause, caller);
    }
}
