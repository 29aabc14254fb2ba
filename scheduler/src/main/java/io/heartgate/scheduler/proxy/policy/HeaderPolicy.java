package io.heartgate.scheduler.proxy.policy;

import java.util.List;

/**
 * Decides the headers of both hops: what a node receives of the client's request and what the
 * client receives of the node's response. Hop-by-hop headers (RFC 9110 7.6.1) and those a
 * {@code Connection} header names are removed in both directions, except the framing headers,
 * which are this hop's to decide; the node is told who asked ({@code X-Forwarded-*}) and the client
 * which node answered ({@code X-Upstream-Node}); streamed responses are marked so that no proxy in
 * front buffers them. Pure: works on {@link Headers} in place and knows nothing of sockets.
 */
public final class HeaderPolicy {

    /** Request headers that describe one connection, not the message. */
    private static final String[] REQUEST_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate",
        "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "expect"};
    /** The same for responses; transfer-encoding is decided again for the client's side. */
    private static final String[] RESPONSE_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate",
        "proxy-connection", "te", "trailer", "upgrade"};
    static final String X_FORWARDED_FOR = "x-forwarded-for";
    static final String X_UPSTREAM_NODE = "x-upstream-node";

    /**
     * Every header name this policy reads or writes by name, lower case, so that an adapter can map
     * them to its own pre-hashed names once.
     */
    public static final List<String> NAMES = List.of("host", "connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "expect",
            "content-length", "content-type", "cache-control", X_FORWARDED_FOR, "x-forwarded-proto", "x-forwarded-host",
            X_UPSTREAM_NODE, "x-accel-buffering");

    /**
     * What the relay does with a response once its headers are decided.
     *
     * @param streaming an SSE or NDJSON stream (counted as such, flushed as it comes)
     * @param keepClient whether the client's connection stays open after this response
     */
    public record ResponsePlan(boolean streaming, boolean keepClient) {
    }

    private HeaderPolicy() {
    }

    /**
     * Turns the client's request headers into the node's: drops hop-by-hop headers and those the
     * {@code Connection} header names, appends {@code clientIp} to {@code X-Forwarded-For}, and
     * sets {@code X-Forwarded-Proto} ({@code https} when the client came over TLS) and
     * {@code X-Forwarded-Host}. The body's length is the aggregated one, so {@code Content-Length} stays.
     */
    public static void towardNode(Headers h, String clientIp, boolean https) {
        String originalHost = h.get("host");
        String priorForwardedFor = h.get(X_FORWARDED_FOR);
        removeHopByHop(h, REQUEST_HOP_BY_HOP);
        h.set(X_FORWARDED_FOR, priorForwardedFor == null ? clientIp : priorForwardedFor + ", " + clientIp);
        h.set("x-forwarded-proto", https ? "https" : "http");
        if (originalHost != null) {
            h.set("x-forwarded-host", originalHost);
        }
    }

    /** Sets the {@code Host} a node expects: its own authority, as its URL names it. */
    public static void hostForNode(Headers h, String hostHeader) {
        h.set("host", hostHeader);
    }

    /**
     * Turns a node's response headers into the client's.
     *
     * @param status the response's status code
     * @param headRequest whether the request was a {@code HEAD} (no body follows)
     * @param clientHttp10 whether the client speaks HTTP/1.0 (no chunks: the body ends by closing)
     * @param keepClient whether the client's connection may stay open (its request asked so and the
     *     proxy is not draining)
     * @param nodeId the node that answered
     */
    public static ResponsePlan towardClient(Headers h, int status, boolean headRequest, boolean clientHttp10,
                                            boolean keepClient, String nodeId) {
        removeHopByHop(h, RESPONSE_HOP_BY_HOP);
        boolean chunked = isChunked(h);
        if (!chunked && !h.contains("content-length") && !headRequest && status != 204 && status != 304
                && status >= 200) {
            // A body that ends when the node closes: chunk it, so the client connection stays usable.
            h.set("transfer-encoding", "chunked");
            chunked = true;
        }
        boolean keep = keepClient;
        if (clientHttp10 && chunked) {
            h.remove("transfer-encoding"); // HTTP/1.0 has no chunks: end by closing
            keep = false;
        }
        h.set(X_UPSTREAM_NODE, nodeId);
        String type = h.get("content-type");
        boolean streaming = type != null && (type.startsWith("text/event-stream") || type.contains("ndjson"));
        if (streaming) {
            // Tell an nginx in front of us not to buffer, and caches not to keep it.
            h.set("cache-control", "no-cache");
            h.set("x-accel-buffering", "no");
        }
        if (!keep) {
            h.set("connection", "close");
        } else if (clientHttp10) {
            h.set("connection", "keep-alive");
        }
        return new ResponsePlan(streaming, keep);
    }

    /** Returns whether the transfer-encoding header lists {@code chunked}. */
    static boolean isChunked(Headers h) {
        String te = h.get("transfer-encoding");
        if (te == null) {
            return false;
        }
        // Token by token without allocating: "gzip, chunked" lists chunked last, as RFC 9112 requires.
        for (int start = 0; start < te.length(); ) {
            int comma = te.indexOf(',', start);
            int end = comma < 0 ? te.length() : comma;
            int a = start;
            int b = end;
            while (a < b && te.charAt(a) == ' ') {
                a++;
            }
            while (b > a && te.charAt(b - 1) == ' ') {
                b--;
            }
            if (b - a == 7 && te.regionMatches(true, a, "chunked", 0, 7)) {
                return true;
            }
            start = end + 1;
        }
        return false;
    }

    /**
     * Removes the headers the Connection header names, then {@code names}. A Connection token
     * never removes the message's framing headers.
     */
    private static void removeHopByHop(Headers h, String[] names) {
        String connection = h.get("connection");
        // "keep-alive" and "close", what nearly every client and node sends, name no header to drop.
        if (connection != null && !connection.equalsIgnoreCase("keep-alive") && !connection.equalsIgnoreCase("close")) {
            for (String token : connection.split(",")) {
                String name = token.trim();
                if (!name.isEmpty() && !name.equalsIgnoreCase("content-length")
                        && !name.equalsIgnoreCase("transfer-encoding")) {
                    h.remove(name);
                }
            }
        }
        for (String name : names) {
            h.remove(name);
        }
    }
}
