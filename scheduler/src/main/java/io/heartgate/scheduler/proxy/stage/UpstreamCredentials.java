package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.trust.UpstreamKey;

/**
 * Sends the key the nodes require ({@code --upstream-api-key}) as {@code Authorization: Bearer} on
 * every request, in place of whatever the client sent.
 */
final class UpstreamCredentials implements Stage {

    private final String authorization;

    UpstreamCredentials(UpstreamKey key) {
        this.authorization = key.authorization();
    }

    @Override
    public void handle(Call call) {
        call.headers().set("authorization", authorization);
        call.headers().remove("x-api-key");
        call.proceed();
    }
}
