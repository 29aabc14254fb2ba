package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.netty.handler.codec.http.FullHttpRequest;
import java.util.Map;

/**
 * What the stages decided about one request, as its {@link Exchange} reads it: a read-only view of
 * a call the stages are done with. {@link StagedCall} is one once it has passed the request on; from
 * then on nothing can change it (a stage's late setter is ignored), so the exchange reads one fixed
 * value without a copy being made per request.
 */
interface Admitted {

    /** Returns the request as the node gets it (the stages' header and body changes applied). */
    FullHttpRequest request();

    /** Returns what the request's path is, read once. */
    Endpoint endpoint();

    /** Returns what is known of the request, read once from the body and updated by the stages. */
    RequestFacts facts();

    /** Returns the one node a stage pinned the request to (a model-management call), or {@code null}: routed. */
    Route.To pinned();

    /** Says whether the client asked to keep its connection open. */
    boolean keepAlive();

    /** Returns when the request arrived, on the monotonic clock: latencies count the stages too. */
    long startNanos();

    /** Returns what every answer to the request carries (a limited key's rate-limit figures). */
    Map<String, String> responseHeaders();

    /** Says whether the proxy alone asked for the request's stream usage chunk, which the client then does not get. */
    boolean usageChunkHidden();
}
