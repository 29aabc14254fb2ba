package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.trust.ApiKeys;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What an exchange tells the per-key limits after its request has left the stages: the tokens its
 * answer used, and the request token of a retry that waited in the gateway queue and was answered
 * 503 {@code overloaded}. Keys are looked up by name at that moment, so a keys file reloaded
 * meanwhile charges the key's current line. Shared by every event loop.
 */
final class KeyLimits {

    private final RateLimits limits;
    private final Supplier<ApiKeys> keys;

    KeyLimits(RateLimits limits, Supplier<ApiKeys> keys) {
        this.limits = limits;
        this.keys = keys;
    }

    /** Charges {@code tokens} to the tokens per minute of the key named {@code caller}. */
    void charge(String caller, long tokens) {
        ApiKeys.Key key = keys == null ? null : keys.get().named(caller);
        if (key != null) {
            limits.charge(key, tokens);
        }
    }

    /**
     * Gives the key named {@code caller} back a request token; returns its rate-limit headers now, or
     * {@code null} (no such key, or no request limit).
     */
    Map<String, String> giveBack(String caller) {
        return keys == null || caller == null ? null : limits.giveBack(caller);
    }
}
