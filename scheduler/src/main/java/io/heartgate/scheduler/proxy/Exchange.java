package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.Dispatcher;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Action;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Decision;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.table.Node;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import java.util.Map;

/**
 * The phase machine of one admitted request on its event loop: its {@link Placement} finds each
 * attempt's node (first and retries alike, the gateway queue included) and holds the attempt's
 * slot; {@link UpstreamSide} sends the request, {@link ClientSide} relays the answer chunk by chunk;
 * a failure goes as the {@link RetryPolicy} decides. Where it stands is one {@link Phase}. What the
 * answer says is told to two taps: {@link NodeEvidence} about the node, {@link Recorder} for
 * counters, metrics and usage.
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
    private final Recorder recorder;
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
        this.recorder = recorder;
        this.placement = new Placement(this, call, facts.caller() != null ? facts.caller() : conn.remoteIp(),
                conn.channel().eventLoop(), dispatcher, retry, evidence, recorder);
        this.watch = timeouts.watch(placement);
        upstream.of(this);
    }

    /** Sends the first attempt: to the node a stage pinned the request to, or where the dispatcher finds room. */
    void start() {
        placement.first(call.pinned());
    }

    /** Returns the parsed address of a node URL. */
    Target targetOf(String url) {
        return upstream.target(url);
    }

    /** Sends the current attempt: on a pooled connection, else on a new one. */
    void send() {
        upstream.open(placement.target(), true);
    }

    /** A new connection to the node is being opened (first: the connect may complete at once). */
    void connecting() {
        phase = phase.to(Phase.CONNECTING);
    }

    /** A new connection could not be opened. */
    void connectFailed(Throwable cause) {
        failed(Failure.CONNECT_FAILED, cause);
    }

    /** Sends the request on the connection the upstream side holds (pooled, or new and just up). */
    void write() {
        phase = phase.to(Phase.AWAITING_HEAD);
        watch.awaitHead();
        upstream.send(req, placement.target());
    }

    /** The node's final response head; {@code false} when unreadable or unexpected (closed like a reset). */
    boolean head(HttpResponse response) {
        if (response.decoderResult().isFailure() || phase != Phase.AWAITING_HEAD) {
            return false;
        }
        int code = response.status().code();
        headNanos = timeouts.nanoTime();
        evidence.head(placement.node());
        answered = placement.node();
        upstream.keepAlive(HttpUtil.isKeepAlive(response));
        if (placement.busyElsewhere(code, resent)) {
            phase = phase.to(Phase.DISCARDING);
            watch.relaying(); // a body that stalls is given up at the idle timeout, not held with its slot
            return true;
        }
        phase = phase.to(Phase.RELAYING);
        if (code < 300 && placement.loadsModel()) {
            evidence.answeredWell(placement.node(), facts);
        }
        client.head(response, answered.id(), placement.affinity());
        watch.relaying();
        return true;
    }

    /** A chunk of the node's response body; ownership of {@code content} passes here. */
    void content(HttpContent content, boolean last) {
        if (phase == Phase.RELAYING) {
            watch.touch();
            evidence.chunk(placement.node());
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
            return;
        }
        content.release();
        if (phase == Phase.DISCARDING && last) {
            discardEnded(upstream::responseEnded);
        } else if (phase == Phase.DISCARDING) {
            watch.touch();
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

    /** Says whether the node's response head is still to come. */
    boolean beforeHead() {
        return phase.beforeHead();
    }

    /** No response head arrived within the first-byte timeout. */
    void firstByteTimedOut() {
        if (phase.beforeHead()) {
            upstream.close();
            failed(Failure.FIRST_BYTE_TIMEOUT, null);
        }
    }

    /** The table stopped routing the node awaited: the request moves on; the node drops the work if it wakes. */
    void nodeLost() {
        upstream.close();
        failed(Failure.NODE_LOST, null);
    }

    /** Nothing was relayed for longer than the idle timeout. */
    void idleTimedOut() {
        if (phase == Phase.RELAYING) {
            failed(Failure.IDLE_TIMEOUT, null);
        } else if (phase == Phase.DISCARDING) {
            discardEnded(upstream::close); // the busy answer stalled: its connection is unusable
        }
    }

    /** The node's busy answer is over: its slot is given back, {@code connection} done with, and the request goes on. */
    private void discardEnded(Runnable connection) {
        watch.done();
        placement.release();
        connection.run();
        placement.retry();
    }

    /** The client hung up: stop the node's work at once. Never the node's failure. */
    void clientGone() {
        placement.cancel();
        if (placement.count() == 0) {
            end(); // never sent: nothing to count, as for a request the stages held
        } else if (phase != Phase.DONE) {
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
        Decision d = retry.decide(failure, placement.count(), phase == Phase.RELAYING, resent);
        placement.failed(evidence.failed(failure, d, placement.node(), cause, facts.caller()));
        switch (d.action()) {
            case RESEND_SAME_NODE -> {
                resent = true;
                upstream.open(placement.target(), false);
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
                if (phase == Phase.RELAYING) {
                    client.cutShort(answered);
                } else if (failure == Failure.CLIENT_GONE && phase.beforeHead()) {
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
