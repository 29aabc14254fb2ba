package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.Dispatcher;
import io.heartgate.scheduler.admission.FairQueue;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Action;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Decision;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.AffinityPick;
import io.heartgate.scheduler.routing.Lease;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.tracing.RequestTrace;
import io.netty.handler.codec.http.FullHttpRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where one {@link Exchange}'s attempts go: asks the {@link Dispatcher} for the first node and for
 * each retry alike (the gateway queue included), keeps the nodes tried and the current attempt's
 * {@link Lease}, gives the lease back exactly once per attempt, and turns each refusal into
 * the answer's words. It is also what the loop's sweep watches ({@link Timeouts.Watched}): which node
 * the request awaits, for what, and since when. Event-loop confined.
 */
final class Placement implements Dispatcher.Outcome, Timeouts.Watched {

    private static final Logger log = LoggerFactory.getLogger(Placement.class);

    private final Exchange exchange;
    private final FullHttpRequest req;
    private final RequestFacts facts;
    private final boolean modelInName;
    private final String fairnessKey;
    private final Executor loop;
    private final Dispatcher dispatcher;
    private final RetryPolicy retry;
    private final NodeEvidence evidence;
    private final Recorder recorder;
    private final RequestTrace trace;
    /** The current attempt's hold on its node, or {@code null} before the first. */
    private Lease lease;
    private AffinityPick affinity;
    private String lastFailure;
    /** Attempts made (a resend to the same node is not one), the first one's node, and every node once a retry is made. */
    private int count;
    private String firstTried;
    private List<String> tried;
    /** The request's place in the gateway queue while every node is full, else {@code null}. */
    private FairQueue.Ticket<GatewayQueue.Waiter> queued;
    private Boolean streams;
    /** Whether the request is for its first node only (a model-management call): never retried elsewhere. */
    private boolean pinned;

    /** @param fairnessKey whom the gateway queue is fair between: the caller's key name, or its address */
    Placement(Exchange exchange, Admitted call, String fairnessKey, Executor loop, Dispatcher dispatcher,
              RetryPolicy retry, NodeEvidence evidence, Recorder recorder) {
        this.exchange = exchange;
        this.req = call.request();
        this.facts = call.facts();
        this.modelInName = call.endpoint().modelInName();
        this.retry = retry;
        this.fairnessKey = fairnessKey;
        this.loop = loop;
        this.dispatcher = dispatcher;
        this.evidence = evidence;
        this.recorder = recorder;
        this.trace = recorder.trace(call);
    }

    /** Returns the request's trace: told here of each attempt and wait, by the exchange of the answer. */
    RequestTrace trace() {
        return trace;
    }

    /** Finds the first attempt's node: {@code pinned} when a stage pinned one, else the dispatcher's. */
    void first(Route.To pinned) {
        if (pinned != null) {
            routed(pinned);
        } else {
            queued = dispatcher.dispatch(facts, List.of(), fairnessKey, loop, this);
            trace.dispatched(queued != null);
        }
    }

    /** Finds a node the request has not tried yet, after the current attempt's slot was given back. */
    void retry() {
        if (pinned) {
            exchange.fail(ErrorType.UPSTREAM_UNREACHABLE, Failures.pinnedFailed(node(), lastFailure), -1, null);
            return;
        }
        recorder.count(Counter.RETRIES);
        exchange.routing();
        queued = dispatcher.dispatch(facts, tried(), fairnessKey, loop, this);
        trace.dispatched(queued != null);
    }

    /**
     * Says whether answering makes the node load the request's model, so that warm first may count it
     * as evidence: not a model-management call, nor Ollama's {@code /api/show}, which reads a model
     * from disk without loading it.
     */
    boolean loadsModel() {
        return facts.model() != null && !pinned && !modelInName;
    }

    @Override
    public void routed(Route.To route) {
        queued = null;
        if (route.panic()) {
            recorder.count(Counter.PANIC_ROUTES);
        }
        pinned |= route.pinned();
        lease = route.lease();
        String id = lease.node().id();
        if (count++ == 0) {
            firstTried = id;
        } else if (tried == null) {
            tried = new ArrayList<>(List.of(firstTried, id));
        } else {
            tried.add(id);
        }
        affinity = route.affinity();
        lease.loading(loadsModel() ? evidence.loadingFor(route.node(), facts) : null);
        evidence.sent(lease);
        exchange.upstream().traceparent(trace.attempt(lease.node()));
        exchange.send();
    }

    @Override
    public void refused(Route.Refused refusal) {
        queued = null;
        exchange.fail(refusal.error(), message(refusal.error()), -1, null);
    }

    @Override
    public void queueFull(int retryAfterSeconds) {
        exchange.fail(ErrorType.OVERLOADED, Failures.queueFull(facts, count, lastFailure), retryAfterSeconds, null);
    }

    @Override
    public void overloaded(String message, int retryAfterSeconds, Map<String, String> limitHeaders) {
        queued = null;
        exchange.fail(ErrorType.OVERLOADED, message, retryAfterSeconds, limitHeaders);
    }

    @Override
    public boolean gone() {
        return exchange.placed();
    }

    /** The client hung up: a request waiting in the queue leaves it, and one never sent ends its trace. */
    void cancel() {
        if (count == 0) {
            trace.ended(0, null);
        }
        if (queued != null) {
            dispatcher.cancel(queued);
            queued = null;
        }
    }

    /** Gives back the current attempt's slot, once; the queue's trouble must not stop the exchange's end. */
    void release() {
        if (lease != null) {
            try {
                dispatcher.release(lease);
            } catch (RuntimeException e) {
                log.warn("Gateway queue failed on a freed slot of node {}", lease.node().id(), e);
            }
        }
    }

    /**
     * The current attempt's node answered {@code code}: returns whether that is an overload answer
     * (503, 429) to pass over for another node that could take the request (busy, not dead: never
     * counted toward its ejection), noting it; with no other node left, it is relayed.
     */
    boolean busyElsewhere(int code, boolean resent) {
        trace.answered(code); // every head comes here
        if (!pinned && (code == 503 || code == 429) && retry.decide(Failure.OVERLOAD_ANSWER, count, false, resent)
                .action() == Action.RETRY_ELSEWHERE && dispatcher.untriedLeft(facts, tried())) {
            recorder.count(Counter.OVERLOAD_ANSWERS);
            trace.failed(Failure.OVERLOAD_ANSWER.name(), false);
            lastFailure = node().id() + ": answered " + code;
            return true;
        }
        return false;
    }

    @Override
    public boolean waitingForHead() {
        return exchange.beforeHead();
    }

    @Override
    public void firstByteTimedOut() {
        exchange.upstream().firstByteTimedOut();
    }

    @Override
    public void idleTimedOut() {
        exchange.upstream().idleTimedOut();
    }

    @Override
    public String awaitedNode() {
        return exchange.beforeHead() && lease != null ? lease.node().id() : null;
    }

    @Override
    public String model() {
        return facts.model();
    }

    @Override
    public boolean streams() {
        if (streams == null) {
            streams = TopLevelFields.streams(req.content(), req.uri());
        }
        return streams;
    }

    @Override
    public boolean waitsForLoad() {
        return lease != null && lease.loading() != null; // cold for its model when sent (warm first)
    }

    @Override
    public String answeringNode() {
        return exchange.upstream().reading() && lease != null ? lease.node().id() : null;
    }

    @Override
    public void streamLost() {
        exchange.upstream().streamLost();
    }

    @Override
    public boolean nodeLost(boolean onlyWithAlternative) {
        if (!exchange.beforeHead() || onlyWithAlternative && !dispatcher.healthyUntriedLeft(facts, tried())) {
            return false; // held out, but the only hope for this model (panic routing sent it there)
        }
        exchange.upstream().nodeLost();
        return true;
    }

    /** Returns the words of the proxy's own answer {@code error} after the attempts made. */
    String message(ErrorType error) {
        return Failures.message(error, facts, this, exchange.firstByteMs());
    }

    /**
     * The current attempt failed with {@code failure}, decided {@code d}: the trace hears so, and
     * {@code why} (unless {@code null}) is noted for the message when every node failed.
     */
    void failed(Failure failure, Decision d, String why) {
        trace.failed(failure.name(), d.action() == Action.RESEND_SAME_NODE);
        if (why != null) {
            lastFailure = why;
        }
    }

    /** Returns why the last failed attempt failed, or {@code null}. */
    String lastFailure() {
        return lastFailure;
    }

    /** Returns the attempts made so far (a resend to the same node is not one). */
    int count() {
        return count;
    }

    /** Returns the ids of the nodes tried, in order: a list made only once a retry needs it. */
    List<String> tried() {
        return tried != null ? tried : count == 0 ? List.of() : List.of(firstTried);
    }

    /** Returns the current attempt's hold on its node, or {@code null} before the first. */
    Lease lease() {
        return lease;
    }

    /** Returns the current attempt's node, or {@code null} before the first. */
    Node node() {
        return lease == null ? null : lease.node();
    }

    /** Returns how the affinity strategy placed the current attempt, or {@code null} under another strategy. */
    AffinityPick affinity() {
        return affinity;
    }
}
