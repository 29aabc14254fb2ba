package io.heartgate.scheduler.proxy;

import io.heartgate.protocol.ModelInfo;
import io.heartgate.scheduler.migration.Continuation;
import io.heartgate.scheduler.migration.Form;
import io.heartgate.scheduler.migration.Sent;
import io.heartgate.scheduler.migration.Splice;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One answer moving to another node after its node failed mid-stream: what the client was sent
 * ({@link Sent}, read back from the connection's {@link Transcript}), the request that asks the
 * next node to go on from there ({@link Continuation}), and the rewriting of that node's stream into
 * the client's ({@link Splice}). Made only when a stream fails, so a stream that never fails pays
 * nothing for it. Event-loop confined.
 */
final class Migration {

    private static final Logger log = LoggerFactory.getLogger(Migration.class);

    /** How a migration ended, as {@code heartgate_stream_migrations_total{result}} counts it. */
    enum Result {
        /** Another node went on with the answer. */
        CONTINUED,
        /** No other node serves the model, or none had room. */
        NO_CANDIDATE,
        /** The answer or the next node's server cannot be continued. */
        NOT_CONTINUABLE,
        /** The continuation failed on the next node too. */
        FAILED;

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final Form form;
    private final byte[] original;
    private final Sent sent;
    private final String from;
    private final String caller;
    /** The request's model, normalised as the table names models. */
    private final String model;
    private final int moves;
    private Splice splice;
    private String to;
    private boolean refused;

    private Migration(Form form, byte[] original, Sent sent, String from, String caller, String model, int moves) {
        this.form = form;
        this.model = model == null ? null : ModelNames.normalize(model);
        this.original = original;
        this.sent = sent;
        this.from = from;
        this.caller = caller;
        this.moves = moves;
    }

    /** Returns the form of a stream answering {@code call} that is kept so that it can move ({@link Transcript}), or {@code null}. */
    static Form movable(RetryPolicy retry, Admitted call) {
        return retry.migrates() ? Form.of(call.endpoint()) : null;
    }

    /**
     * Returns the move of the answer to {@code call} that {@code node} cut, from what its client was
     * sent ({@code transcript}; {@code previous}: the answer's last move, or {@code null}), or
     * {@code null} when it cannot move (why is logged).
     */
    static Migration after(Admitted call, Transcript transcript, Node node, Migration previous) {
        Form form = Form.of(call.endpoint());
        String why;
        if (form == null || !transcript.on()) {
            why = transcript.overflowed() ? "the answer is longer than the gateway keeps" : "not a stream that can be continued";
        } else {
            transcript.cut();
            Sent sent = Sent.read(form, transcript.bytes(), transcript.relayed());
            why = Continuation.refusal(sent);
            if (why == null) {
                byte[] original = previous != null ? previous.original : ByteBufUtil.getBytes(call.request().content());
                return new Migration(form, original, sent, node.id(), call.facts().caller(), call.facts().model(),
                        previous == null ? 1 : previous.moves + 1);
            }
        }
        log.info("Stream of {} from node {} cut: {}", who(call.facts().caller()), node.id(), why);
        return null;
    }

    /** Returns how many times this answer has moved, this move included. */
    int moves() {
        return moves;
    }

    /**
     * Gives {@code upstream} the request that asks {@code node} to continue, over {@code req}'s
     * method, target and headers; returns {@code false} when its server cannot (why is logged).
     */
    boolean sendTo(Node node, FullHttpRequest req, UpstreamSide upstream) {
        Continuation.Result c = Continuation.of(form, original, sent, node.heartbeat().backend(), prefill(node));
        if (c.body() == null) {
            log.info("Stream of {} from node {} not continued on node {}: {}", who(), from, node.id(), c.refusal());
            return false;
        }
        to = node.id();
        splice = new Splice(form, sent, original);
        DefaultFullHttpRequest out = new DefaultFullHttpRequest(req.protocolVersion(), req.method(), req.uri(),
                Unpooled.wrappedBuffer(c.body()), req.headers().copy(), req.trailingHeaders().copy());
        out.headers().set(HttpHeaderNames.CONTENT_LENGTH, c.body().length);
        upstream.request(out);
        return true;
    }

    /** Returns what {@code node} said of whether its server continues a final assistant message for the model, or {@code null}. */
    private Boolean prefill(Node node) {
        for (ModelInfo m : node.heartbeat().modelInfo()) {
            if (model != null && ModelNames.normalize(m.name()).equals(model)) {
                return m.prefill();
            }
        }
        return null;
    }

    /**
     * The next node's response head, of status {@code code} and {@code contentType}: returns whether
     * it goes on with the answer as a stream of the same form (then the move is logged and
     * counted); else its answer is to be read away and the client's stream cut ({@link #refused}).
     */
    boolean answered(int code, String contentType, Recorder recorder) {
        String type = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT);
        refused = code >= 300 || !(form.sse() ? type.startsWith("text/event-stream")
                : type.startsWith("application/x-ndjson") || type.startsWith("application/json"));
        if (refused) {
            log.info("Stream of {} from node {} cut: node {} answered its continuation {} {}", who(), from, to, code,
                    type.isEmpty() ? "without a content type" : type);
        } else {
            log.info("Stream of {} moved from node {} to node {} after {} tokens (move {})", who(), from, to,
                    sent.tokens(), moves);
            recorder.migration(Result.CONTINUED);
        }
        return !refused;
    }

    /** Says whether the next node refused the continuation. */
    boolean refused() {
        return refused;
    }

    /**
     * Returns the chunk the client gets for {@code content} of the next node's stream, taking
     * ownership of it: the last one when the node's is, or when a stop sequence across the cut ended
     * the answer ({@link Splice#stopped}).
     */
    HttpContent splice(HttpContent content, boolean last) {
        byte[] out;
        try {
            out = splice.next(ByteBufUtil.getBytes(content.content()));
        } finally {
            content.release();
        }
        return last || splice.stopped() ? new DefaultLastHttpContent(Unpooled.wrappedBuffer(out))
                : new DefaultHttpContent(Unpooled.wrappedBuffer(out));
    }

    private String who() {
        return who(caller);
    }

    private static String who(String caller) {
        return caller == null ? "an anonymous caller" : "key " + caller;
    }
}
