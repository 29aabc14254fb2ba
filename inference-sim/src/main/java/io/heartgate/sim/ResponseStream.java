package io.heartgate.sim;

import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;

/**
 * Writes one streamed answer piece by piece, sending the headers with the first piece, and cuts it
 * without losing what was written. Event loop only.
 */
final class ResponseStream {

    private final RoutingContext ctx;
    private final String contentType;
    private Future<Void> lastWrite;

    ResponseStream(RoutingContext ctx, String contentType) {
        this.ctx = ctx;
        this.contentType = contentType;
    }

    /** Writes {@code piece}; the first one goes out behind the headers of a chunked, uncached answer. */
    void write(String piece) {
        if (lastWrite == null) {
            ctx.response().setChunked(true)
                    .putHeader("content-type", contentType)
                    .putHeader("cache-control", "no-cache");
        }
        lastWrite = ctx.response().write(piece);
    }

    /** Writes {@code piece} and ends the answer. */
    void end(String piece) {
        ctx.response().end(piece);
    }

    /** Closes the connection once the pieces written are on the wire; closing at once can drop them. */
    void cut() {
        if (lastWrite == null) {
            ctx.request().connection().close();
        } else {
            lastWrite.onComplete(v -> ctx.request().connection().close());
        }
    }
}
