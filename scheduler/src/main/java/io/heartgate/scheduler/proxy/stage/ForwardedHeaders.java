package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.proxy.policy.HeaderPolicy;

/** Turns the client's request headers into the node's ({@link HeaderPolicy#towardNode}). */
final class ForwardedHeaders implements Stage {

    private final boolean https;

    ForwardedHeaders(boolean https) {
        this.https = https;
    }

    @Override
    public void handle(Call call) {
        HeaderPolicy.towardNode(call.headers(), call.clientIp(), https);
        call.proceed();
    }
}
