package io.heartgate.scheduler.proxy.policy;

import io.heartgate.scheduler.request.ErrorType;
/**
 * Decides what follows a failed attempt: try another node, send again to the same node, answer
 * the client with an error, pass the node's own answer through, or give up.
 *
 * <p>The rules: a connect failure, or a reset before the response head, is retried on a node not
 * tried yet while retries remain, else answered 502 {@code upstream_unreachable}; nothing is ever
 * retried once a response byte reached the client (the client's connection is cut instead, so it
 * sees the truncation). A pooled connection that its node closed as it was reused is sent again,
 * once per request, to the same node on a new connection: the node never saw the request. A
 * node's overload answer (503, 429) is retried elsewhere while retries remain, else passed
 * through. No response head within the first-byte timeout gives 504 {@code upstream_timeout}
 * without a retry (the node may still be working on it). A client that hangs up ends everything.
 * Only connect failures count toward a node's ejection. Pure and thread-safe.
 */
public final class RetryPolicy {

    /** What went wrong with an attempt. */
    public enum Failure {
        /** The connection (or its TLS handshake) could not be opened. */
        CONNECT_FAILED,
        /** The node closed or reset the connection before a response head. */
        RESET_BEFORE_HEAD,
        /** A connection taken from the pool turned out closed by its node before a response head. */
        STALE_CONNECTION,
        /** The node answered 503 or 429: busy, not dead. */
        OVERLOAD_ANSWER,
        /** No response head within the first-byte timeout. */
        FIRST_BYTE_TIMEOUT,
        /** The node went silent mid-response for longer than the idle timeout. */
        IDLE_TIMEOUT,
        /** The node closed or reset the connection mid-response. */
        BROKE_OFF,
        /** The client hung up. */
        CLIENT_GONE,
        /**
         * The table stopped routing the node (its heartbeat said DOWN, it expired or left, or it was
         * ejected) while the response head was awaited, or while its answer had gone silent: the
         * request is moved at once.
         */
        NODE_LOST
    }

    /** What the relay does next. */
    public enum Action {
        /** Route again, leaving out the nodes tried. */
        RETRY_ELSEWHERE,
        /** Send to the same node again on a new connection; neither a retry nor a failure. */
        RESEND_SAME_NODE,
        /** Answer the client with {@link Decision#error()}. */
        ANSWER,
        /** Relay the node's own (overload) answer to the client. */
        PASS_THROUGH,
        /** Close the node's connection and the client's: the client already has part of the response. */
        CUT,
        /**
         * The node failed mid-stream: continue the answer on another node, from the text the client
         * already has, if the answer can be continued (else {@link #CUT}).
         */
        MIGRATE,
        /** Close the node's connection; nobody is left to answer. */
        ABANDON
    }

    /**
     * One decision.
     *
     * @param action what to do
     * @param error the answer's type when {@code action} is {@link Action#ANSWER}, else {@code null}
     */
    public record Decision(Action action, ErrorType error) {
        static final Decision RETRY = new Decision(Action.RETRY_ELSEWHERE, null);
        static final Decision RESEND = new Decision(Action.RESEND_SAME_NODE, null);
        static final Decision UNREACHABLE = new Decision(Action.ANSWER, ErrorType.UPSTREAM_UNREACHABLE);
        static final Decision TIMEOUT = new Decision(Action.ANSWER, ErrorType.UPSTREAM_TIMEOUT);
        static final Decision PASS = new Decision(Action.PASS_THROUGH, null);
        static final Decision CUT = new Decision(Action.CUT, null);
        static final Decision MIGRATE = new Decision(Action.MIGRATE, null);
        static final Decision ABANDON = new Decision(Action.ABANDON, null);
    }

    private final int retries;
    private final int migrations;

    /** Creates the policy; {@code retries} other nodes may be tried after the first (0 to 10); no stream moves. */
    public RetryPolicy(int retries) {
        this(retries, 0);
    }

    /**
     * Creates the policy; {@code retries} other nodes may be tried after the first (0 to 10), and an
     * answer cut mid-stream may move to another node {@code migrations} times ({@code --migrate-streams}).
     */
    public RetryPolicy(int retries, int migrations) {
        if (retries < 0) {
            throw new IllegalArgumentException("retries must not be negative, was " + retries);
        }
        if (migrations < 0) {
            throw new IllegalArgumentException("migrations must not be negative, was " + migrations);
        }
        this.retries = retries;
        this.migrations = migrations;
    }

    /**
     * Returns what follows {@code failure}.
     *
     * @param attempts attempts made so far, the failed one included (a resend to the same node is
     *     not an attempt)
     * @param bytesToClient whether any part of the response (its head) reached the client
     * @param resentOnce whether this request was already sent again after a stale connection
     */
    public Decision decide(Failure failure, int attempts, boolean bytesToClient, boolean resentOnce) {
        return decide(failure, attempts, bytesToClient, resentOnce, Integer.MAX_VALUE);
    }

    /**
     * Returns what follows {@code failure}, as {@link #decide(Failure, int, boolean, boolean)}; an
     * answer that has moved {@code moved} times so far may move again when its node broke off or
     * went silent mid-answer and moves are left.
     */
    public Decision decide(Failure failure, int attempts, boolean bytesToClient, boolean resentOnce, int moved) {
        if (failure == Failure.CLIENT_GONE) {
            return Decision.ABANDON;
        }
        if (bytesToClient) {
            return (failure == Failure.BROKE_OFF || failure == Failure.IDLE_TIMEOUT || failure == Failure.NODE_LOST)
                    && moved < migrations
                    ? Decision.MIGRATE : Decision.CUT;
        }
        boolean retriesLeft = attempts <= retries;
        return switch (failure) {
            case STALE_CONNECTION -> resentOnce ? (retriesLeft ? Decision.RETRY : Decision.UNREACHABLE) : Decision.RESEND;
            case CONNECT_FAILED, RESET_BEFORE_HEAD, NODE_LOST -> retriesLeft ? Decision.RETRY : Decision.UNREACHABLE;
            case OVERLOAD_ANSWER -> retriesLeft ? Decision.RETRY : Decision.PASS;
            case FIRST_BYTE_TIMEOUT -> Decision.TIMEOUT;
            case IDLE_TIMEOUT, BROKE_OFF -> Decision.CUT; // not reached: both happen only while relaying
            case CLIENT_GONE -> Decision.ABANDON;
        };
    }

    /** Says whether a stream cut by its node may move to another node at all ({@code --migrate-streams} above 0). */
    public boolean migrates() {
        return migrations > 0;
    }

    /** Returns whether {@code failure} counts toward the node's ejection: only a failed connect does. */
    public static boolean holdsAgainstNode(Failure failure) {
        return failure == Failure.CONNECT_FAILED;
    }
}
