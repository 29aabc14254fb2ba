package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.table.Node;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;

/**
 * Which node's answer one {@link Exchange}'s client gets, and the answer's moves to other nodes
 * after its node failed mid-stream ({@link Migration}, at most {@code --migrate-streams}). Until a
 * move, every call is a field read: a stream that never fails pays nothing for it. The answer keeps
 * the latencies of its first head across moves. Event-loop confined.
 */
final class Moves {

    private final Admitted call;
    private final Recorder recorder;
    /** The current move, or {@code null} while the first node answers. */
    private Migration current;
    /** The node whose answer the client gets, once its head came. */
    private Node answered;
    private long headNanos;

    Moves(Admitted call, Recorder recorder) {
        this.call = call;
        this.recorder = recorder;
    }

    /** Says whether the answer has moved (the client has its head and part of the answer). */
    boolean moved() {
        return current != null;
    }

    /** Returns how many times the answer has moved. */
    int count() {
        return current == null ? 0 : current.moves();
    }

    /** Returns the node whose answer the client gets, or {@code null} before a head. */
    Node answered() {
        return answered;
    }

    /** Returns when the answer's first head came, on the loop's monotonic clock. */
    long headNanos() {
        return headNanos;
    }

    /**
     * Gives {@code upstream} the request for {@code node}: the client's as it came, or after a move
     * the continuation; returns {@code false} when the node's server cannot continue.
     */
    boolean sendTo(Node node, FullHttpRequest req, UpstreamSide upstream) {
        return current == null || current.sendTo(node, req, upstream);
    }

    /**
     * {@code node}'s final head came at {@code nanos} and is not read away (not a busy answer passed
     * over for another node): before a move, its answer is the client's; returns whether the answer
     * is yet to move (its client is still to get a head).
     */
    boolean head(Node node, long nanos) {
        if (current == null) {
            headNanos = nanos;
            answered = node;
        }
        return current == null;
    }

    /**
     * Returns whether {@code node}'s answer, of {@code response}, goes to the client: always before
     * a move; after one, only as a stream of the same form (else it is read away and the client's
     * stream cut, {@link #refused}).
     */
    boolean continues(Node node, HttpResponse response) {
        if (current == null) {
            return true;
        }
        if (!current.answered(response.status().code(), response.headers().get(HttpHeaderNames.CONTENT_TYPE), recorder)) {
            return false;
        }
        answered = node;
        return true;
    }

    /** Returns the chunk the client gets for {@code content} (ownership passes), rewritten after a move. */
    HttpContent splice(HttpContent content, boolean last) {
        return current == null ? content : current.splice(content, last);
    }

    /** Says whether the next node refused the continuation. */
    boolean refused() {
        return current != null && current.refused();
    }

    /**
     * The answering node broke off mid-stream: returns whether the answer moves (routing again
     * follows), else it is cut; a stream that could not move is counted.
     */
    boolean move(Transcript kept) {
        if (!kept.on() && !kept.overflowed()) {
            return false; // not a stream that can move (a whole answer, a model pull): cut as ever
        }
        Migration next = Migration.after(call, kept, answered, current);
        if (next == null) {
            recorder.migration(Migration.Result.NOT_CONTINUABLE);
            return false;
        }
        current = next;
        return true;
    }

    /** Counts a moved answer that is cut now: the next node failed it ({@code error} is how), or none was found. */
    void cut(ErrorType error) {
        if (current != null) {
            recorder.migration(error == null || error == ErrorType.UPSTREAM_TIMEOUT
                    || error == ErrorType.UPSTREAM_UNREACHABLE ? Migration.Result.FAILED : Migration.Result.NO_CANDIDATE);
        }
    }
}
