package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Decision;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Lease;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.time.Ticker;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;

/**
 * The tap through which what a node's answers say about it is told: to passive health (answered,
 * failed), to the stall rule (when it last sent anything), to warm first (it answered a request
 * for a model it was cold for, so it holds the model now), to the node's token load (a request's
 * first token ends its prefill, and a stream's first-token wait teaches the node's prefill speed)
 * and to routing's memory of which node made which response. Exchanges tell it; they never reach
 * those rooms themselves. One per event loop: the times come from the loop's clocks.
 */
final class NodeEvidence {

    private final PassiveHealth health;
    private final RouteSelector selector;
    private final ProxyCounters counters;
    private final Ticker clock;
    private final Ticker precise;

    /**
     * @param clock the loop's coarse clock
     * @param precise the loop's monotonic clock, which times first tokens
     */
    NodeEvidence(PassiveHealth health, RouteSelector selector, ProxyCounters counters, Ticker clock, Ticker precise) {
        this.health = health;
        this.selector = selector;
        this.counters = counters;
        this.clock = clock;
        this.precise = precise;
    }

    /** Returns the model {@code node} has to load for a request of {@code facts}, as warm first tracks it, or {@code null}. */
    String loadingFor(Node node, RequestFacts facts) {
        return selector.loadingFor(node, facts);
    }

    /** The request of {@code lease} goes to its node now: the wait for its first token starts. */
    void sent(Lease lease) {
        lease.sent(precise.nanos());
    }

    /**
     * The node of {@code lease} sent a response head: it is alive, and it answered just now. A head
     * that is not a stream's (SSE, NDJSON) came after the whole answer: the prefill is long done,
     * though its time says nothing of the node's speed.
     */
    void head(Lease lease, HttpResponse response) {
        Node node = lease.node();
        node.inFlight().answered(clock.millis());
        health.succeeded(node.id());
        String type = response.headers().get(HttpHeaderNames.CONTENT_TYPE);
        if (lease.prefill() != 0 && (type == null || !type.regionMatches(true, 0, "text/event-stream", 0, 17)
                && !type.regionMatches(true, 0, "application/x-ndjson", 0, 20))) {
            lease.firstToken(precise.nanos(), false);
        }
    }

    /** The node of {@code lease} sent a chunk just now: the stall rule's evidence; a stream's first is its first token. */
    void chunk(Lease lease) {
        lease.node().inFlight().answered(clock.millis());
        if (lease.prefill() != 0) {
            lease.firstToken(precise.nanos(), true);
        }
    }

    /**
     * {@code node} reported {@code promptTokens} for a request of {@code bytes} of body: its token
     * load's estimates follow, where the strategy keeps one.
     */
    void reported(Node node, long bytes, long promptTokens) {
        if (selector.keepsTokenLoad()) {
            node.inFlight().tokens().reported(bytes, promptTokens);
        }
    }

    /** The node {@code nodeId} made the response {@code id} of the Responses API: a follow-up goes there. */
    void responseMade(String nodeId, String id) {
        selector.responses().put(id, nodeId);
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
