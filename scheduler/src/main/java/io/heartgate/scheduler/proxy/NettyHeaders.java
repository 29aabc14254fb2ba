package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.policy.Headers;
import io.netty.handler.codec.http.HttpHeaders;

/** Shows Netty's headers of one message to the header policy and the stages. */
record NettyHeaders(HttpHeaders headers) implements Headers {

    @Override
    public String get(CharSequence name) {
        return headers.get(name);
    }

    @Override
    public boolean contains(CharSequence name) {
        return headers.contains(name);
    }

    @Override
    public void set(CharSequence name, String value) {
        headers.set(name, value);
    }

    @Override
    public void remove(CharSequence name) {
        headers.remove(name);
    }
}
