package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.Dispatcher;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Action;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Decision;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.table.Node;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.HttpContent;
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
 * {@link Moves} knows whose answer the client gets, and moves a stream whose node fails mid-answer.
 */
final class Exchange {

    private final ClientConnection conn;
    private final Admitted call;
    private final ClientSide client;
    private final UpstreamSide upstream;
    private final Timeouts timeouts;
    private final Timeouts.Watch watch;
    private final RetryPolicy retry;
    private final NodeEvidence evidence;
    private final Placement placement;
    private final Recorder recorder;
    private final Moves moves;
    private Phase phase = Phase.ROUTING;
    private boolean resent;

    Exchange(ClientConnection conn, Admitted call, UpstreamSide upstream, Timeouts timeouts, Dispatcher dispatcher,
             RetryPolicy retry, NodeEvidence evidence, Recorder recorder) {
        this.conn = conn;
        this.call = call;
        this.upstream = upstream;
        this.timeouts = timeouts;
        this.retry = retry;
        this.evidence = evidence;
        this.recorder = recorder;
        this.moves = new Moves(call, recorder);
        this.placement = new Placement(this, call, call.facts().caller() != null ? call.facts().caller() : conn.remoteIp(),
                conn.channel().eventLoop(), dispatcher, retry, evidence, recorder);
        this.client = new ClientSide(conn, call, recorder, timeouts, evidence, placement.trace());
        this.watch = timeouts.watch(placement);
        upstream.of(this, watch, call.request());
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
        if (moves.sendTo(placement.node(), call.request(), upstream)) {
            upstream.open(upstream.target(placement.node().url()), true);
        } else { // its server cannot continue: another node may (none left: cut, no_candidate)
            placement.release();
            placement.retry();
        }
    }

    /** The node's final head: returns whether the client gets it, or it is read away for another node (busy, not dead). */
    boolean head(HttpResponse response) {
        int code = response.status().code();
        Node node = placement.node();
        evidence.head(placement.lease(), response);
        if (placement.busyElsewhere(code, resent) || !moves.continues(node, response)) {
            return false; // read away: then another node, or (a refused continuation) the client's stream is cut
        }
        boolean first = moves.head(node, timeouts.nanoTime()); // a busy node read away never answered
        phase = phase.to(Phase.RELAYING);
        if (code < 300 && placement.loadsModel()) {
            evidence.answeredWell(node, call.facts());
        }
        if (first) { // a moved answer's client has its head already
            client.head(response, node.id(), placement.affinity(), Migration.movable(retry, call));
        }
        return true;
    }

    /** A chunk of the answer relayed; ownership of {@code content} passes here. */
    void content(HttpContent content, boolean last) {
        evidence.chunk(placement.lease());
        content = moves.splice(content, last);
        boolean stopped = !last && content instanceof LastHttpContent; // a stop sequence across a move's cut
        if (!last && !stopped) {
            if (!client.chunk(content)) {
                upstream.autoRead(false); // resumed by clientWritabilityChanged
            }
            return;
        }
        placement.release(); // before the client has the last byte: its next request finds the slot free
        ChannelFuture written = client.last(content, moves.answered(), moves.moved());
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
        if (moves.refused()) {
            moves.cut(null);
            cut();
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
        Decision d = retry.decide(failure, placement.count(), relaying, resent, moves.count());
        placement.failed(failure, d, evidence.failed(failure, d, placement.node(), cause, call.facts().caller()));
        switch (d.action()) {
            case RESEND_SAME_NODE -> {
                resent = true;
                upstream.resend();
            }
            case MIGRATE, RETRY_ELSEWHERE -> {
                if (d.action() == Action.MIGRATE) { // the stream goes on from another node, or is cut when it cannot
                    if (!moves.move(conn.usage().transcript())) {
                        cut();
                        return;
                    }
                    upstream.close();
                }
                placement.release();
                placement.retry();
            }
            case ANSWER -> {
                placement.release();
                fail(d.error(), placement.message(d.error()), -1, null);
            }
            case CUT, PASS_THROUGH -> { // PASS_THROUGH is only ever decided for a head
                moves.cut(null);
                cut();
            }
            case ABANDON -> {
                if (relaying || moves.moved()) {
                    client.cutShort(moves.answered());
                } else if (failure == Failure.CLIENT_GONE && beforeHead()) {
                    client.goneBeforeHead(placement.streams());
                }
                finish(0);
                placement.release();
                upstream.close();
            }
        }
    }

    /** Cuts the client's answer (charged: the node's usage, else an estimate). */
    private void cut() {
        client.cutShort(moves.answered());
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

    /** Answers the proxy's own error {@code type} and ends the exchange: {@link ClientSide#error} says how. */
    void fail(ErrorType type, String message, int retryAfterSeconds, Map<String, String> limitHeaders) {
        if (moves.moved()) { // the client has the head and part of the answer: no error answer can follow
            moves.cut(type);
            cut();
            return;
        }
        finish(type.status());
        conn.exchangeDone(this, client.error(type, message, retryAfterSeconds, limitHeaders), client.closesAfter());
    }

    private void finish(int metricStatus) {
        if (phase != Phase.DONE) {
            end();
            client.ended(metricStatus, moves.answered(), moves.headNanos());
        }
    }

    private void end() {
        if (phase != Phase.DONE) {
            phase = phase.to(Phase.DONE);
            watch.done();
            call.request().release();
        }
    }
}
