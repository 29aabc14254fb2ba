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
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.Map;

/**
 * The phase machine of one admitted request on its event loop ({@link Phase}: routing, sent,
 * relaying, done). Its {@link Placement} finds each attempt's node (first and retries alike, the
 * gateway queue included) and holds the attempt's slot; its {@link UpstreamSide} talks to the node
 * (connecting, awaiting the head, reading away a busy answer); its {@link ClientSide} writes what
 * the client gets. A failure goes as the {@link RetryPolicy} decides. What the answer says is told
 * to two taps: {@link NodeEvidence} about the node, {@link Recorder} for counters, metrics and usage.
 * A stream whose node fails mid-answer may move to another node ({@link Migration}): routing again,
 * the continuation sent without a second head to the client, its stream spliced into the client's.
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
    private final Recorder recorder;
    private Phase phase = Phase.ROUTING;
    /** The answer's move to another node once its node failed mid-stream, else {@code null}. */
    private Migration migration;
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
        if (migration != null && !migration.sendTo(placement.node(), req, upstream)) {
            placement.release(); // its server cannot continue: another node may (none left: cut, no_candidate)
            placement.retry();
            return;
        }
        upstream.open(upstream.target(placement.node().url()), true);
    }

    /** The node's final head: returns whether the client gets it, or it is read away for another node (busy, not dead). */
    boolean head(HttpResponse response) {
        int code = response.status().code();
        Node node = placement.node();
        evidence.head(node);
        if (migration == null) { // a moved answer's latencies stay those of its first head
            headNanos = timeouts.nanoTime();
            answered = node;
        }
        if (placement.busyElsewhere(code, resent)) {
            return false;
        }
        if (migration != null) {
            if (!migration.answered(code, response.headers().get(HttpHeaderNames.CONTENT_TYPE), recorder)) {
                return false; // read away, then the client's stream is cut (discarded)
            }
            answered = node;
        }
        phase = phase.to(Phase.RELAYING);
        if (code < 300 && placement.loadsModel()) {
            evidence.answeredWell(answered, facts);
        }
        if (migration == null) { // a moved answer's client has its head already
            client.head(response, answered.id(), placement.affinity(), Migration.movable(retry, call));
        }
        return true;
    }

    /** A chunk of the answer relayed; ownership of {@code content} passes here. */
    void content(HttpContent content, boolean last) {
        evidence.chunk(answered);
        boolean stopped = false;
        if (migration != null) { // a stop sequence across the cut may end it early: the node's rest is not wanted
            content = migration.splice(content, last);
            stopped = !last && content instanceof LastHttpContent;
            last |= stopped;
        }
        if (!last) {
            if (!client.chunk(content)) {
                upstream.autoRead(false); // resumed by clientWritabilityChanged
            }
            return;
        }
        ChannelFuture written = client.last(content, answered);
        placement.release();
        upstream.responseEnded(stopped);
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
        if (migration != null && migration.refused()) {
            cut(Migration.Result.FAILED);
        } else {
            placement.retry();
        }
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
        // A continuation not answering yet is retried as any request is; what would be an answer cuts (fail).
        Decision d = retry.decide(failure, placement.count(), relaying, resent, migration == null ? 0 : migration.moves());
        placement.failed(evidence.failed(failure, d, placement.node(), cause, facts.caller()));
        switch (d.action()) {
            case MIGRATE -> migrate();
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
                if (d.action() != Action.ABANDON) {
                    cut(migration != null ? Migration.Result.FAILED : null);
                    return;
                }
                if (relaying || migration != null) {
                    client.cutShort(answered);
                } else if (failure == Failure.CLIENT_GONE && beforeHead()) {
                    client.goneBeforeHead(placement.streams());
                }
                finish(0);
                placement.release();
                upstream.close();
            }
        }
    }

    /** The node failed mid-stream: the answer goes on from another node, or is cut when it cannot. */
    private void migrate() {
        Transcript kept = conn.usage().transcript();
        if (!kept.on() && !kept.overflowed()) {
            cut(null); // not a stream that can move (a whole answer, a model pull): cut as ever
            return;
        }
        Migration next = Migration.after(call, kept, answered, migration);
        if (next == null) {
            cut(Migration.Result.NOT_CONTINUABLE);
            return;
        }
        migration = next;
        placement.release();
        upstream.close();
        placement.retry();
    }

    /** Cuts the client's answer (charged: the node's usage, else an estimate); a stream that could not move is counted. */
    private void cut(Migration.Result result) {
        if (result != null) {
            recorder.migration(result);
        }
        client.cutShort(answered);
        finish(client.status());
        placement.release();
        upstream.close();
        client.cut();
        conn.exchangeDone(this, null, true);
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
        if (migration != null) { // the client has the head and part of the answer: no error answer can follow
            cut(type == ErrorType.UPSTREAM_TIMEOUT || type == ErrorType.UPSTREAM_UNREACHABLE
                    ? Migration.Result.FAILED : Migration.Result.NO_CANDIDATE);
            return;
        }
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
