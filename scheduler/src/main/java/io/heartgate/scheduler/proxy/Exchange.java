package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.Dispatcher;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Action;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Decision;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.table.Node;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import java.util.Map;

/**
 * The phase machine of one admitted request on its event loop ({@link Phase}: routing, sent,
 * relaying, done). Its {@link Placement} finds each attempt's node (first and retries alike, the
 * gateway queue included) and holds the attempt's slot; its {@link UpstreamSide} talks to the node
 * (connecting, awaiting the head, reading away a busy answer); its {@link ClientSide} writes what
 * the client gets. A failure goes as the {@link RetryPolicy} decides. What the answer says is told
 * to two taps: {@link NodeEvidence} about the node, {@link Recorder} for counters, metrics and usage.
 */
final class Exchange {

    private final ClientConnection conn;
    private final Admitted call;
    private final FullHttpRequest req;
    private final RequestFacts facts;
    private final ClientSide client;
    private final UpstreamSide upstream;
    private final Timeouts timeouts;
    private final Timeouts.Watch watch;
    private final RetryPolicy retry;
    private final NodeEvidence evidence;
    private final Placement placement;
    private Phase phase = Phase.ROUTING;
    private boolean resent;
    private long headNanos;
    /** The node whose answer the client gets, once its head came. */
    private Node answered;

    Exchange(ClientConnection conn, Admitted call, UpstreamSide upstream, Timeouts timeouts, Dispatcher dispatcher,
             RetryPolicy retry, NodeEvidence evidence, Recorder recorder) {
        this.conn = conn;
        this.call = call;
        this.req = call.request();
        this.facts = call.facts();
        this.client = new ClientSide(conn, call, recorder, timeouts);
        this.upstream = upstream;
        this.timeouts = timeouts;
        this.retry = retry;
        this.evidence = evidence;
        this.placement = new Placement(this, call, facts.caller() != null ? facts.caller() : conn.remoteIp(),
                conn.channel().eventLoop(), dispatcher, retry, evidence, recorder);
        this.watch = timeouts.watch(placement);
        upstream.of(this, watch, req);
    }

    /** Sends the first attempt: to the node a stage pinned the request to, or where the dispatcher finds room. */
    void start() {
        placement.first(call.pinned());
    }

    /** Returns the node's half, which the sweep's timeouts reach through the placement. */
    UpstreamSide upstream() {
        return upstream;
    }

    /** Sends the current attempt to its node. */
    void send() {
        phase = phase.to(Phase.SENT);
        upstream.open(upstream.target(placement.node().url()), true);
    }

    /** The node's final head: returns whether the client gets it, or it is read away for another node (busy, not dead). */
    boolean head(HttpResponse response) {
        int code = response.status().code();
        headNanos = timeouts.nanoTime();
        answered = placement.node();
        evidence.head(answered);
        if (placement.busyElsewhere(code, resent)) {
            return false;
        }
        phase = phase.to(Phase.RELAYING);
        if (code < 300 && placement.loadsModel()) {
            evidence.answeredWell(answered, facts);
        }
        client.head(response, answered.id(), placement.affinity());
        return true;
    }

    /** A chunk of the answer relayed; ownership of {@code content} passes here. */
    void content(HttpContent content, boolean last) {
        evidence.chunk(answered);
        if (!last) {
            if (!client.chunk(content)) {
                upstream.autoRead(false); // resumed by clientWritabilityChanged
            }
            return;
        }
        ChannelFuture written = client.last(content, answered);
        placement.release();
        upstream.responseEnded();
        finish(client.status());
        conn.exchangeDone(this, written, client.closesAfter());
    }

    /** End of one read from the node: one flush for whatever that read gave. */
    void upstreamReadComplete() {
        client.readComplete();
    }

    /** The node's busy answer is over (read to its end, cut off, or stalled): its slot is given back and the request goes on. */
    void discarded() {
        watch.done();
        placement.release();
        placement.retry();
    }

    /** Says whether the node's response head is still to come. */
    boolean beforeHead() {
        return phase == Phase.SENT && upstream.awaitingHead();
    }

    /** The client hung up: stop the node's work at once. Never the node's failure. */
    void clientGone() {
        placement.cancel();
        if (placement.count() == 0) {
            end(); // never sent: nothing to count, as for a request the stages held
        } else if (phase != Phase.DONE) {
            nodeFailed(Failure.CLIENT_GONE, null);
        }
    }

    /** The client's socket buffer filled or drained: pause or resume reading from the node. */
    void clientWritabilityChanged(boolean writable) {
        if (phase == Phase.RELAYING) {
            upstream.autoRead(writable);
        }
    }

    /** The current attempt failed with {@code failure} (the client's going included): what follows is the retry policy's. */
    void nodeFailed(Failure failure, Throwable cause) {
        boolean relaying = phase == Phase.RELAYING;
        Decision d = retry.decide(failure, placement.count(), relaying, resent);
        placement.failed(evidence.failed(failure, d, placement.node(), cause, facts.caller()));
        switch (d.action()) {
            case RESEND_SAME_NODE -> {
                resent = true;
                upstream.resend();
            }
            case RETRY_ELSEWHERE -> {
                placement.release();
                placement.retry();
            }
            case ANSWER -> {
                placement.release();
                fail(d.error(), placement.message(d.error()));
            }
            case CUT, ABANDON, PASS_THROUGH -> { // PASS_THROUGH is only ever decided for a head
                if (relaying) {
                    client.cutShort(answered);
                } else if (failure == Failure.CLIENT_GONE && beforeHead()) {
                    client.goneBeforeHead(placement.streams());
                }
                finish(d.action() == Action.ABANDON ? 0 : client.status());
                placement.release();
                upstream.close();
                if (d.action() != Action.ABANDON) {
                    client.cut();
                    conn.exchangeDone(this, null, true);
                }
            }
        }
    }

    /** The request goes back to routing, for another node. */
    void routing() {
        phase = phase.to(Phase.ROUTING);
        upstream.reset();
    }

    /** Says whether the exchange no longer waits for a node (its client hung up meanwhile). */
    boolean placed() {
        return phase != Phase.ROUTING;
    }

    /** Returns the first-byte timeout, in ms, for the answer's words. */
    long firstByteMs() {
        return timeouts.firstByteMs();
    }

    /** Answers the client with the proxy's own error and ends the exchange. */
    void fail(ErrorType type, String message) {
        fail(type, message, -1, null);
    }

    /**
     * Answers {@code type} with {@code Retry-After} when {@code retryAfterSeconds} is not negative;
     * {@code limitHeaders}, when not {@code null}, are the key's rate-limit figures after its token came back.
     */
    void fail(ErrorType type, String message, int retryAfterSeconds, Map<String, String> limitHeaders) {
        if (limitHeaders != null) {
            client.extraHeaders(limitHeaders);
        }
        finish(type.status());
        conn.exchangeDone(this, client.error(type, message, retryAfterSeconds), client.closesAfter());
    }

    private void finish(int metricStatus) {
        if (phase == Phase.DONE) {
            return;
        }
        end();
        client.ended(metricStatus, answered, headNanos);
    }

    private void end() {
        if (phase != Phase.DONE) {
            phase = phase.to(Phase.DONE);
            watch.done();
            req.release();
        }
    }
}
