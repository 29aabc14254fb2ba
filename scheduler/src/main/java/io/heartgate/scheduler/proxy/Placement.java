package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.Dispatcher;
import io.heartgate.scheduler.admission.FairQueue;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Action;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.AffinityPick;
import io.heartgate.scheduler.routing.Lease;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.table.Node;
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
    }

    /** Finds the first attempt's node: {@code pinned} when a stage pinned one, else the dispatcher's. */
    void first(Route.To pinned) {
        if (pinned != null) {
            routed(pinned);
        } else {
            queued = dispatcher.dispatch(facts, List.of(), fairnessKey, loop, this);
        }
    }

    /** Finds a node the request has not tried yet, after the current attempt's slot was given back. */
    void retry() {
        if (pinned) {
            exchange.fail(ErrorType.UPSTREAM_UNREACHABLE, "node " + node().id() + " failed: "
                    + lastFailure + " (a management call goes to its node only)", -1, null);
            return;
        }
        recorder.count(Counter.RETRIES);
        exchange.routing();
        queued = dispatcher.dispatch(facts, tried(), fairnessKey, loop, this);
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
        } else {
            if (tried == null) {
                tried = new ArrayList<>(3);
                tried.add(firstTried);
            }
            tried.add(id);
        }
        affinity = route.affinity();
        lease.loading(loadsModel() ? evidence.loadingFor(route.node(), facts) : null);
        evidence.sent(lease);
        exchange.send();
    }

    @Override
    public void refused(Route.Refused refusal) {
        queued = null;
        exchange.fail(refusal.error(), message(refusal.error()), -1, null);
    }

    @Override
    public void queueFull(int retryAfterSeconds) {
        exchange.fail(ErrorType.OVERLOADED, count == 0
                ? "every node serving " + Failures.what(facts) + " is at capacity and the gateway queue is full"
                : "every other node serving the model is at capacity and the gateway queue is full (after "
                        + lastFailure + ")", retryAfterSeconds, null);
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

    /** The client hung up: a request waiting in the queue leaves it. */
    void cancel() {
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
        if (!pinned && (code == 503 || code == 429) && retry.decide(Failure.OVERLOAD_ANSWER, count, false, resent)
                .action() == Action.RETRY_ELSEWHERE && dispatcher.untriedLeft(facts, tried())) {
            recorder.count(Counter.OVERLOAD_ANSWERS);
            failed(node().id() + ": answered " + code);
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
        return loading() != null;
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
        if (!exchange.beforeHead()
                || onlyWithAlternative && !dispatcher.healthyUntriedLeft(facts, tried())) {
            return false; // held out, but the only hope for this model (panic routing sent it there)
        }
        exchange.upstream().nodeLost();
        return true;
    }

    /** Returns the words of the proxy's own answer {@code error} after the attempts made. */
    String message(ErrorType error) {
        return Failures.message(error, facts, this, exchange.firstByteMs());
    }

    /** Notes why the current attempt failed, for the message when every node failed; {@code null} is ignored. */
    void failed(String why) {
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

    /** Returns the model the current attempt's node was cold for when it was sent (warm first), or {@code null}. */
    String loading() {
        return lease == null ? null : lease.loading();
    }

    /** Returns how the affinity strategy placed the current attempt, or {@code null} under another strategy. */
    AffinityPick affinity() {
        return affinity;
    }

}
