package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.policy.HeaderPolicy;
import io.heartgate.scheduler.proxy.policy.Headers;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.util.HashMap;
import java.util.Map;

/**
 * Shows Netty's headers of one message to the header policy and the stages. The policy's names
 * are passed to Netty as pre-hashed {@link AsciiString}s: Netty hashes a plain string's characters
 * on every lookup, the policy makes about thirty lookups per request.
 */
record NettyHeaders(HttpHeaders headers) implements Headers {

    private static final Map<String, AsciiString> KNOWN = new HashMap<>();

    static {
        for (String name : HeaderPolicy.NAMES) {
            KNOWN.put(name, AsciiString.cached(name));
        }
    }

    private static CharSequence name(CharSequence name) {
        AsciiString known = name instanceof String s ? KNOWN.get(s) : null;
        return known != null ? known : name;
    }

    @Override
    public String get(CharSequence name) {
        return headers.get(name(name));
    }

    @Override
    public boolean contains(CharSequence name) {
        return headers.contains(name(name));
    }

    @Override
    public void set(CharSequence name, String value) {
        headers.set(name(name), value);
    }

    @Override
    public void remove(CharSequence name) {
        headers.remove(name(name));
    }
}
