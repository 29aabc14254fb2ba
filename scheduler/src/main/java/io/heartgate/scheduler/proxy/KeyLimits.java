package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.trust.ApiKeys;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The per-key token limits as the proxy's exchanges charge them: the tokens each answer used,
 * looked up by key name at the moment of charging, so a keys file reloaded meanwhile charges the
 * key's current line. Shared by every event loop.
 */
final class KeyLimits {

    /** Bytes of a request body a prompt token stands for, about: OpenAI's rule of thumb of four characters. */
    static final int BYTES_PER_PROMPT_TOKEN = 4;

    private final RateLimits limits;
    private final Supplier<ApiKeys> keys;
    private final boolean streamsReport;

    /**
     * @param streamsReport whether every OpenAI stream is asked for its usage ({@code --force-usage}), so
     *     that a cut one is charged an estimate like any other answer
     */
    KeyLimits(RateLimits limits, Supplier<ApiKeys> keys, boolean streamsReport) {
        this.limits = limits;
        this.keys = keys;
        this.streamsReport = streamsReport;
    }

    /**
     * Charges an estimate for a generation to {@code uri} cut before its node reported usage (the
     * client hung up, or the node's connection broke): a prompt token for every {@value
     * #BYTES_PER_PROMPT_TOKEN} bytes of the request body and a completion token for each event relayed.
     * Without it a client reading all but the end of a stream, or sending a long prompt and leaving at
     * the first token, would escape {@code tpm=}. Only for the calls whose finished answers are counted:
     * OpenAI's chat and completions (an SSE stream of theirs only when every stream is asked for its
     * usage) and Ollama's chat and generate; never a model pull's progress, say.
     */
    void chargeCut(String caller, String uri, int requestBytes, long events, boolean sse) {
        Endpoint e = Endpoint.of(uri);
        boolean openAi = e.usageWhenAsked();
        if (openAi && (!sse || streamsReport) || ollama(e) && !sse) {
            charge(caller, requestBytes / BYTES_PER_PROMPT_TOKEN + events);
        }
    }

    /**
     * Charges the prompt's estimate for a generation to {@code uri} whose client hung up after the
     * node had the request but before its answer began: the node read the prompt (the costly part of a
     * long one), so leaving before the head does not escape {@code tpm=} either. The same calls as
     * {@link #chargeCut}; an OpenAI request that {@code streams} only when every stream is asked for its usage.
     */
    void chargeGoneBeforeHead(String caller, String uri, int requestBytes, boolean streams) {
        Endpoint e = Endpoint.of(uri);
        if (e.usageWhenAsked() && (!streams || streamsReport) || ollama(e)) {
            charge(caller, requestBytes / BYTES_PER_PROMPT_TOKEN);
        }
    }

    private static boolean ollama(Endpoint e) {
        return e.generatesText() && e.dialect() == Endpoint.Dialect.OLLAMA;
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
