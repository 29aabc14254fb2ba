package io.heartgate.scheduler.proxy;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;

/** Writes the errors the proxy makes itself, in the OpenAI shape CONTRACT.md fixes. */
final class ProxyErrors {

    static final String NO_UPSTREAM = "no_upstream";
    static final String MODEL_NOT_FOUND = "model_not_found";
    static final String UPSTREAM_UNREACHABLE = "upstream_unreachable";
    static final String UPSTREAM_TIMEOUT = "upstream_timeout";
    static final String REQUEST_TOO_LARGE = "request_too_large";

    private ProxyErrors() {
    }

    /** Sends {@code {"error": {"message": ..., "type": ...}}} unless the client is gone or a head was written. */
    static void send(HttpServerResponse response, int status, String type, String message) {
        if (response.closed() || response.headWritten()) {
            return;
        }
        Buffer body = Buffer.buffer(new JsonObject()
                .put("error", new JsonObject().put("message", message).put("type", type))
                .encode());
        response.setStatusCode(status)
                .putHeader("content-type", "application/json; charset=utf-8")
                .putHeader("content-length", String.valueOf(body.length()))
                .end(body);
    }
}
