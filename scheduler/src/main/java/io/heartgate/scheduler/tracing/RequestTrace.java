package io.heartgate.scheduler.tracing;

import io.heartgate.scheduler.table.Node;

/**
 * The trace of one proxied request, told what happens to it as it happens: a server span for the
 * whole request and a child span per attempt on a node, retries and moved streams each one more.
 * Every method does nothing by default, which is all {@link #NONE} is. Confined to the request's
 * event loop.
 */
public interface RequestTrace {

    /** Traces nothing. */
    RequestTrace NONE = new RequestTrace() {
    };

    /**
     * An attempt goes to {@code node} (after part of the answer reached the client: a moved stream
     * goes on there): ends an attempt still open, starts the next, and returns the W3C
     * {@code traceparent} the node gets, or {@code null} when nothing is traced (the caller's own
     * then goes on unchanged).
     */
    default String attempt(Node node) {
        return null;
    }

    /** The current attempt's node answered with {@code status} (a head relayed, or a busy one read away). */
    default void answered(int status) {
    }

    /** The client's answer was cut short: it never sees a clean end (the stream could not go on elsewhere). */
    default void cut() {
    }

    /**
     * The current attempt failed with {@code failure} (a retry policy's failure name), and
     * {@code resent}: the request goes to the same node again within the same attempt.
     */
    default void failed(String failure, boolean resent) {
    }

    /**
     * The request was dispatched for a node; {@code waiting}: every node was full and it waits in
     * the gateway queue (until its next attempt, or its end: the wait becomes an event then).
     */
    default void dispatched(boolean waiting) {
    }

    /** A chunk of the answer goes to the client: the first one is the time to first chunk. */
    default void firstChunk() {
    }

    /** The node reported the tokens of the request's prompt ({@code input}) and of its answer ({@code output}). */
    default void usage(long input, long output) {
    }

    /**
     * The request ended with {@code status} (0: abandoned, the client gone), answered by
     * {@code node} ({@code null} when no node answered): both spans end.
     */
    default void ended(int status, Node node) {
    }
}
