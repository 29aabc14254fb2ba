package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.proxy.policy.Headers;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.trust.ApiKeys;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets through only callers with a key of the keys file ({@code --api-keys}): the key comes as
 * {@code Authorization: Bearer KEY} (the OpenAI and Ollama clients) or {@code x-api-key: KEY}
 * (Anthropic's). Both headers are removed whatever the outcome, so the gateway's key never reaches a
 * node; the key's name becomes the request's caller for the later stages, logs and metrics. Missing
 * or unknown key: 401 {@code invalid_api_key}; a model the key may not use: 403
 * {@code model_not_allowed}, with a limited key's {@code x-ratelimit-*} headers as on its every
 * answer (no token taken). Reads the keys anew for each request, so a reloaded file applies from
 * the next request on, and a request already past this stage is never affected.
 */
final class Authentication implements Stage {

    private static final Logger log = LoggerFactory.getLogger(Authentication.class);
    private static final String AUTHORIZATION = "authorization";
    private static final String X_API_KEY = "x-api-key";

    private final Supplier<ApiKeys> keys;
    private final RateLimits limits;

    Authentication(Supplier<ApiKeys> keys, RateLimits limits) {
        this.keys = keys;
        this.limits = limits;
    }

    /** Refuses a known key's request 403 {@code model_not_allowed}, with its rate-limit headers. */
    private void forbid(Call call, ApiKeys.Key key, String message) {
        if (key.limited()) {
            call.responseHeaders(limits.peek(key));
        }
        call.answer(Answer.error(ErrorType.MODEL_NOT_ALLOWED, message));
    }

    @Override
    public void handle(Call call) {
        Headers headers = call.headers();
        String presented = presented(headers);
        headers.remove(AUTHORIZATION);
        headers.remove(X_API_KEY);
        if (presented == null) {
            log.debug("Request from {} without an API key refused", call.clientIp());
            call.answer(Answer.error(ErrorType.INVALID_API_KEY,
                    "missing API key: send Authorization: Bearer KEY or x-api-key: KEY"));
            return;
        }
        ApiKeys.Key key = keys.get().find(presented);
        if (key == null) {
            log.debug("Request from {} with an unknown API key refused", call.clientIp());
            call.answer(Answer.error(ErrorType.INVALID_API_KEY, "invalid API key"));
            return;
        }
        call.facts(call.facts().withCaller(key.name(), key.priority()));
        // Only a key limited to some models needs the whole body's top level read (a second model
        // field could slip another model past the check); every other request's body is read only up
        // to its model.
        if (!key.models().isEmpty() && call.namesModelTwice()) {
            log.debug("Request from {} (key {}) refused: its body names the model more than once", call.clientIp(),
                    key.name());
            forbid(call, key, "API key '" + key.name() + "' may only use some models, and this body names its model"
                    + " more than once");
            return;
        }
        if (!key.allows(call.facts().model(), call.method())) {
            log.debug("Request from {} (key {}) for model '{}' refused: not allowed for the key", call.clientIp(),
                    key.name(), call.facts().displayModel());
            String model = call.facts().model() == null ? "a request that names no model"
                    : "model '" + call.facts().displayModel() + "'";
            forbid(call, key, "API key '" + key.name() + "' may not use " + model);
            return;
        }
        call.proceed();
    }

    /** Returns the key sent, or {@code null}: a Bearer credential first, else {@code x-api-key}. */
    static String presented(Headers headers) {
        String authorization = headers.get(AUTHORIZATION);
        if (authorization != null) {
            String value = authorization.strip();
            // RFC 9110: the scheme is case-insensitive.
            if (value.length() > 7 && value.regionMatches(true, 0, "Bearer ", 0, 7)) {
                String token = value.substring(7).strip();
                if (!token.isEmpty()) {
                    return token;
                }
            }
        }
        String apiKey = headers.get(X_API_KEY);
        if (apiKey != null && !apiKey.isBlank()) {
            return apiKey.strip();
        }
        return null;
    }
}
