package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.FairQueue;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Action;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Decision;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.proxy.stage.Answer;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.usage.UsageAccounting;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;

/**
 * Relays one routed request to its node ({@link UpstreamSide}) and the response back chunk by chunk
 * with back-pressure ({@link ClientSide}), on its event loop. Only I/O lives here: the node comes
 * from the route selector, headers from the header policy, what follows a failure from the retry
 * policy; where the exchange stands is one {@link Phase}.
 */
final class Exchange implements Timeouts.Watched {

    private final Relay relay;
    private final ClientConnection conn;
    private final FullHttpRequest req;
    private final RequestFacts facts;
    private final ClientSide client;
    private final UpstreamSide upstream;
    private final Timeouts.Watch watch;
    private final Attempts attempts;
    private final long startNanos;
    private Phase phase = Phase.ROUTING;
    private boolean resent;
    private long headNanos;
    private String answeredBy;
    private Boolean streams;
    /** Whether the request is for its first node only (a model-management call): never retried elsewhere. */
    private boolean pinned;
    /** Whether answering makes the node load the request's model; worked out once, when first asked. */
    private Boolean loadsModel;
    /** The retry's place in the gateway queue while every other node is full, else {@code null}. */
    private FairQueue.Ticket<GatewayQueue.Waiter> queued;

    Exchange(Relay relay, ClientConnection conn, FullHttpRequest req, RequestFacts facts, boolean keepAlive,
             long startNanos, java.util.Map<String, String> extraHeaders) {
        this.relay = relay;
        this.conn = conn;
        this.req = req;
        this.facts = facts;
        this.client = new ClientSide(conn, req, keepAlive, relay.counters(), extraHeaders);
        this.upstream = new UpstreamSide(relay.pool(), this);
        this.watch = relay.timeouts().watch(this);
        this.attempts = new Attempts(relay.slotFreed());
        this.startNanos = startNanos;
    }

    /** Sends an attempt to the node of {@code route}: the routing stage's first choice, or a retry's. */
    void start(Route.To route) {
        pinned |= route.pinned();
        relay.begin(attempts, route, loadsModel() ? facts : RequestFacts.NONE);
        open(true);
    }

    /**
     * Says whether answering this request makes its node load the model, so that warm first may count
     * it as evidence: not a model-management call, nor Ollama's {@code /api/show}, which read a model
     * from disk without loading it.
     */
    private boolean loadsModel() {
        if (loadsModel == null) {
            loadsModel = facts.model() != null && !pinned && !Endpoint.of(req.uri()).modelInName();
        }
        return loadsModel;
    }

    private void open(boolean pooledOk) {
        if (pooledOk && upstream.takePooled(attempts.target())) {
            write();
        } else {
            phase = phase.to(Phase.CONNECTING); // first: the connect may complete at once
            upstream.connect(attempts.target());
        }
    }

    /** A new connection could not be opened. */
    void connectFailed(Throwable cause) {
        failed(Failure.CONNECT_FAILED, cause);
    }

    /** Sends the request on the connection the upstream side holds (pooled, or new and just up). */
    void write() {
        phase = phase.to(Phase.AWAITING_HEAD);
        watch.awaitHead();
        upstream.send(req, attempts.target());
    }

    /**
     * The node's response head, or a 1xx answer to skip; returns {@code false} when it is
     * unreadable or unexpected, and the connection is then closed like a reset.
     */
    boolean head(HttpResponse response) {
        if (response.decoderResult().isFailure() || phase != Phase.AWAITING_HEAD) {
            return false;
        }
        int code = response.status().code();
        if (code >= 100 && code < 200) {
            phase = phase.to(Phase.INFORMATIONAL); // 100 or 103: the real head follows an empty last chunk
            return true;
        }
        headNanos = relay.nanoTime();
        relay.answeredBy(attempts.node());
        answeredBy = attempts.node().id();
        relay.health().succeeded(answeredBy);
        upstream.keepAlive(HttpUtil.isKeepAlive(response));
        if ((code == 503 || code == 429) && !pinned && relay.retry().decide(Failure.OVERLOAD_ANSWER, attempts.count(), false,
                resent).action() == Action.RETRY_ELSEWHERE && relay.untriedLeft(facts, attempts.tried())) {
            // Busy, not dead: try another node, never count it toward ejection; with no other node left, pass it on.
            relay.counters().add(Counter.OVERLOAD_ANSWERS);
            attempts.failed(answeredBy + ": answered " + code);
            phase = phase.to(Phase.DISCARDING);
            watch.relaying(); // a body that stalls is given up at the idle timeout, not held with its slot
            return true;
        }
        phase = phase.to(Phase.RELAYING);
        conn.usage().head(req, code, response);
        if (code < 300 && loadsModel()) {
            relay.answeredWell(attempts.node(), facts);
        }
        if (attempts.affinity() != null) {
            response.headers().set("X-Heartgate-Affinity", attempts.affinity().result());
            relay.metrics().recordAffinity(attempts.affinity());
        }
        client.head(response, answeredBy);
        watch.relaying();
        return true;
    }

    /** A chunk of the node's response body; ownership of {@code content} passes here. */
    void content(HttpContent content, boolean last) {
        if (phase == Phase.RELAYING) {
            watch.touch();
            relay.answeredBy(attempts.node());
            conn.usage().add(content.content());
            HttpContent shown = conn.usage().shown(content, last);
            if (!last) {
                if (shown != null && !client.chunk(shown)) {
                    upstream.autoRead(false); // resumed by clientWritabilityChanged
                }
                return;
            }
            ChannelFuture written = client.last(shown);
            attempts.release();
            upstream.responseEnded();
            conn.usage().ended(relay, facts.caller(), modelLabel());
            finish(client.status());
            conn.exchangeDone(this, written, client.closesAfter());
            return;
        }
        content.release();
        if (last && phase == Phase.INFORMATIONAL) {
            phase = phase.to(Phase.AWAITING_HEAD);
        } else if (phase == Phase.DISCARDING) {
            if (last) {
                discardEnded(upstream::responseEnded);
            } else {
                watch.touch();
            }
        }
    }

    /** End of one read from the node: one flush for whatever that read gave. */
    void upstreamReadComplete() {
        client.readComplete();
    }

    /** The node's connection closed while this exchange used it. */
    void upstreamClosed(Throwable cause) {
        upstream.lost();
        if (phase.beforeHead()) {
            failed(upstream.reused() ? Failure.STALE_CONNECTION : Failure.RESET_BEFORE_HEAD, cause);
        } else if (phase == Phase.DISCARDING) {
            discardEnded(() -> { }); // the connection is gone; the overload answer already decided the retry
        } else if (phase == Phase.RELAYING) {
            failed(Failure.BROKE_OFF, cause);
        }
    }

    @Override
    public boolean waitingForHead() {
        return phase.beforeHead();
    }

    @Override
    public void firstByteTimedOut() {
        if (phase.beforeHead()) {
            upstream.close();
            failed(Failure.FIRST_BYTE_TIMEOUT, null);
        }
    }

    @Override
    public String awaitedNode() {
        return phase.beforeHead() && attempts.node() != null ? attempts.node().id() : null;
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
        return attempts.loading() != null;
    }

    @Override
    public boolean nodeLost(boolean onlyWithAlternative) {
        if (!phase.beforeHead()
                || onlyWithAlternative && !relay.healthyUntriedLeft(facts, attempts.tried())) {
            return false; // held out, but the only hope for this model (panic routing sent it there)
        }
        upstream.close(); // the node drops the work if it ever wakes up
        failed(Failure.NODE_LOST, null);
        return true;
    }

    @Override
    public void idleTimedOut() {
        if (phase == Phase.RELAYING) {
            failed(Failure.IDLE_TIMEOUT, null);
        } else if (phase == Phase.DISCARDING) {
            discardEnded(upstream::close); // the busy answer stalled: its connection is unusable
        }
    }

    /**
     * The node's busy answer is over (read to its end, cut off, or stalled): its slot is given back,
     * {@code connection} done with, and the request goes on to another node.
     */
    private void discardEnded(Runnable connection) {
        watch.done();
        attempts.release();
        connection.run();
        retryElsewhere();
    }

    /** The client hung up: stop the node's work at once. Never the node's failure. */
    void clientGone() {
        if (queued != null) {
            relay.queue().cancel(queued);
            queued = null;
        }
        if (phase != Phase.DONE) {
            failed(Failure.CLIENT_GONE, null);
        }
    }

    /** The client's socket buffer filled or drained: pause or resume reading from the node. */
    void clientWritabilityChanged(boolean writable) {
        if (phase == Phase.RELAYING) {
            upstream.autoRead(writable);
        }
    }

    private void failed(Failure failure, Throwable cause) {
        Decision d = relay.retry().decide(failure, attempts.count(), phase == Phase.RELAYING, resent);
        attempts.failed(Failures.record(relay, failure, d, attempts.node(), cause, facts.caller()));
        switch (d.action()) {
            case RESEND_SAME_NODE -> {
                resent = true;
                open(false);
            }
            case RETRY_ELSEWHERE -> {
                attempts.release();
                retryElsewhere();
            }
            case ANSWER -> {
                attempts.release();
                fail(d.error(), Failures.message(d.error(), facts, attempts, relay.firstByteTimeoutMs()));
            }
            case CUT, ABANDON, PASS_THROUGH -> { // PASS_THROUGH is only ever decided for a head
                if (phase == Phase.RELAYING) {
                    conn.usage().cut(relay, req, facts.caller(), modelLabel());
                } else if (failure == Failure.CLIENT_GONE && phase.beforeHead()) {
                    conn.usage().goneBeforeHead(relay, req, facts.caller(), streams());
                }
                finish(d.action() == Action.ABANDON ? 0 : client.status());
                attempts.release();
                upstream.close();
                if (d.action() != Action.ABANDON) {
                    client.cut();
                    conn.exchangeDone(this, null, true);
                }
            }
        }
    }

    private void retryElsewhere() {
        if (pinned) {
            fail(ErrorType.UPSTREAM_UNREACHABLE, "node " + attempts.node().id() + " failed: "
                    + attempts.lastFailure() + " (a management call goes to its node only)");
            return;
        }
        relay.counters().add(Counter.RETRIES);
        phase = phase.to(Phase.ROUTING);
        Route r = relay.reroute(facts, attempts.tried());
        if (r instanceof Route.To next) {
            start(next);
        } else if (r == Route.Refused.FULL) {
            waitForSlot();
        } else {
            ErrorType error = ((Route.Refused) r).error();
            fail(error, Failures.message(error, facts, attempts, relay.firstByteTimeoutMs()));
        }
    }

    /** Every other node for the model is at capacity: the retry waits in the gateway queue, as a first attempt would. */
    private void waitForSlot() {
        GatewayQueue queue = relay.queue();
        FairQueue.Ticket<GatewayQueue.Waiter> t = queue.enqueue(new QueuedRetry(this, conn.channel().eventLoop()),
                facts.caller() != null ? facts.caller()
                : conn.remoteIp(), facts.priority());
        if (t == null) {
            failOverloaded("every other node serving the model is at capacity and the gateway queue is full (after "
                    + attempts.lastFailure() + ")", queue.retryAfterSeconds());
        } else if (t.queued()) {
            queued = t;
        }
    }

    private void failOverloaded(String message, int retryAfterSeconds) {
        relay.counters().error(ErrorType.OVERLOADED);
        finish(ErrorType.OVERLOADED.status());
        conn.exchangeDone(this, client.answer(Answer.error(ErrorType.OVERLOADED, message)
                .withHeader("Retry-After", Integer.toString(retryAfterSeconds))), client.closesAfter());
    }

    /** The gateway queue found a slot for this retry (on its event loop). */
    void slotFound(Route.To route) {
        queued = null;
        if (phase != Phase.ROUTING) { // the client hung up as it left the queue
            route.unclaim();
            relay.queue().slotFreed(route.node());
            return;
        }
        start(route);
    }

    /** The queued retry is refused ({@code refusal}) or waited too long ({@code refusal} null); on its event loop. */
    void queueGaveUp(Route.Refused refusal, String message, int retryAfterSeconds) {
        queued = null;
        if (phase != Phase.ROUTING) {
            return;
        }
        if (refusal != null) {
            fail(refusal.error(), Failures.message(refusal.error(), facts, attempts, relay.firstByteTimeoutMs()));
        } else {
            // It waited and got nothing: the key gets its request token back, as a first attempt does.
            java.util.Map<String, String> limitHeaders = relay.keyLimits().giveBack(facts.caller());
            if (limitHeaders != null) {
                client.extraHeaders(limitHeaders);
            }
            failOverloaded(message, retryAfterSeconds);
        }
    }

    RequestFacts facts() {
        return facts;
    }

    java.util.List<String> tried() {
        return attempts.tried();
    }

    private String modelLabel() {
        return answeredBy == null ? null : UsageAccounting.modelLabel(facts.model(), attempts.node());
    }

    /** Answers the client with the proxy's own error and ends the exchange. */
    private void fail(ErrorType type, String message) {
        relay.counters().error(type);
        finish(type.status());
        conn.exchangeDone(this, client.answer(Answer.error(type, message)), client.closesAfter());
    }

    private void finish(int metricStatus) {
        if (phase == Phase.DONE) {
            return;
        }
        phase = phase.to(Phase.DONE);
        watch.done();
        req.release();
        if (answeredBy != null) { // a response cut short (client gone) is recorded with status class "none"
            relay.metrics().record(answeredBy, metricStatus, modelLabel(), relay.nanoTime() - startNanos,
                    headNanos - startNanos);
        }
        relay.metrics().recordCaller(facts.caller(), metricStatus);
        relay.usage().answered(facts.caller(), modelLabel(), metricStatus);
        client.ended();
    }
}
