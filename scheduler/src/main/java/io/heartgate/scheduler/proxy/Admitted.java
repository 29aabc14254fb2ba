package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.netty.handler.codec.http.FullHttpRequest;
import java.util.Map;

/**
 * What the stages decided about one request, handed to its {@link Exchange} as one value.
 *
 * @param request the request as the node gets it (the stages' header and body changes applied)
 * @param endpoint what its path is, read once
 * @param facts what is known of it, read once from the body and updated by the stages
 * @param pinned the one node a stage pinned it to (a model-management call), or {@code null}: routed
 * @param keepAlive whether the client asked to keep its connection open
 * @param startNanos when it arrived, on the monotonic clock: latencies count the stages too
 * @param responseHeaders what every answer to it carries (a limited key's rate-limit figures)
 * @param usageUnasked whether the proxy alone asked for its stream's usage chunk, kept from the client
 */
record Admitted(FullHttpRequest request, Endpoint endpoint, RequestFacts facts, Route.To pinned, boolean keepAlive,
                long startNanos, Map<String, String> responseHeaders, boolean usageUnasked) {
}
