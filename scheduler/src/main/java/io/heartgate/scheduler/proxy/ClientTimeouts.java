package io.heartgate.scheduler.proxy;

/**
 * How long a client connection may take over each part of a request, in ms: sitting idle between
 * requests, sending a request's head, sending its body. One connection's check runs every quarter
 * of the shortest (at least every 100 ms apart), so each is enforced within a quarter of itself.
 */
record ClientTimeouts(long keepAliveMs, long headerMs, long bodyMs) {

    /** Returns the period of a connection's check. */
    long checkEveryMs() {
        return Math.max(100, Math.min(keepAliveMs, Math.min(headerMs, bodyMs)) / 4);
    }
}
