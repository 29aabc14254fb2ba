package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.trust.ApiKeys;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds each API key to its {@code rpm=} and {@code tpm=} ({@link RateLimits}): over either, 429
 * {@code rate_limit_exceeded} with {@code Retry-After}; a limited key's answers all carry OpenAI's
 * {@code x-ratelimit-*} headers. Runs after {@link Authentication}, which names the caller.
 */
final class Limits implements Stage {

    private static final Logger log = LoggerFactory.getLogger(Limits.class);

    private final Supplier<ApiKeys> keys;
    private final RateLimits limits;

    Limits(Supplier<ApiKeys> keys, RateLimits limits) {
        this.keys = keys;
        this.limits = limits;
    }

    @Override
    public void handle(Call call) {
        String caller = call.facts().caller();
        ApiKeys.Key key = caller == null ? null : keys.get().named(caller);
        if (key == null || !key.limited()) {
            call.proceed();
            return;
        }
        RateLimits.Verdict v = limits.admit(key);
        call.responseHeaders(v.headers());
        if (v.allowed()) {
            call.proceed();
            return;
        }
        String per = v.limit().equals("tokens") ? key.tpm() + " tokens" : key.rpm() + " requests";
        log.debug("Request from {} (key {}) refused: over its {} per minute", call.clientIp(), key.name(), per);
        call.answer(Answer.error(ErrorType.RATE_LIMITED, "API key '" + key.name() + "' is over its " + per
                + " per minute on this scheduler; retry after " + v.retryAfterSeconds() + " s")
                .withHeader("Retry-After", Integer.toString(v.retryAfterSeconds())));
    }
}
