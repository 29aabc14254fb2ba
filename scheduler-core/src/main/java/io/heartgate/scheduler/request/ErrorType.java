package io.heartgate.scheduler.request;

/**
 * Names the answers the proxy gives itself, in the OpenAI error shape
 * {@code {"error": {"message": ..., "type": ...}}}; the table is in docs/REFERENCE.md.
 */
public enum ErrorType {
    /** 503: no routable node at all. */
    NO_UPSTREAM(503, "no_upstream"),
    /** 404: some nodes are routable, none serves the requested model. */
    MODEL_NOT_FOUND(404, "model_not_found"),
    /** 502: every node tried failed before answering. */
    UPSTREAM_UNREACHABLE(502, "upstream_unreachable"),
    /** 504: the node sent no response head within the first-byte timeout. */
    UPSTREAM_TIMEOUT(504, "upstream_timeout"),
    /** 413: the body is over the limit. */
    REQUEST_TOO_LARGE(413, "request_too_large"),
    /** 401: no API key, or one the keys file does not hold. */
    INVALID_API_KEY(401, "invalid_api_key"),
    /** 403: the caller's API key may not use the requested model. */
    MODEL_NOT_ALLOWED(403, "model_not_allowed"),
    /** 400, 414 or 431: the request is not valid HTTP/1.1; no node ever sees it. */
    BAD_REQUEST(400, "bad_request"),
    /** 408: the request's head or body did not arrive within its timeout; no node ever sees it. */
    REQUEST_TIMEOUT(408, "request_timeout"),
    /** 405: a model-management call ({@code /api/pull} and the like) while {@code --allow-model-management} is off. */
    MANAGEMENT_DISABLED(405, "management_disabled"),
    /** 404: a management call's {@code X-Heartgate-Node} names no listed node. */
    NODE_NOT_FOUND(404, "node_not_found"),
    /** 503: every node for the model is at capacity and the gateway queue is full, or the wait ran out. */
    OVERLOADED(503, "overloaded"),
    /** 429: the caller's API key is over its requests or tokens per minute. */
    RATE_LIMITED(429, "rate_limit_exceeded");

    private final int status;
    private final String wireName;

    ErrorType(int status, String wireName) {
        this.status = status;
        this.wireName = wireName;
    }

    /** Returns the HTTP status usually answered with this type. */
    public int status() {
        return status;
    }

    /** Returns the {@code type} field's value, as clients and metric labels see it. */
    public String wireName() {
        return wireName;
    }
}
