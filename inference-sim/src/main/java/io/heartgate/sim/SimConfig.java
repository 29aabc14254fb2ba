package io.heartgate.sim;

import io.heartgate.protocol.Durations;
import io.heartgate.protocol.InvalidSettingException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Configures one simulated inference node.
 *
 * @param name the node's name; it appears in every generated text so tests can tell nodes apart
 * @param bindHost the address to listen on
 * @param port the port; 0 picks a free one
 * @param models the models served; the first is the default for OpenAI requests without a model
 * @param tokens tokens generated per request unless the request asks for fewer
 * @param tokenDelay time per generated token
 * @param firstTokenDelay time before the first token (prompt processing)
 * @param maxConcurrency requests generated at once; the rest wait in a queue
 * @param maxQueue requests that may wait; beyond it the node answers 503 like a busy Ollama
 * @param embeddingDim length of embedding vectors
 * @param faults faults injected from the start
 * @param apiKey the key inference calls need as {@code Authorization: Bearer}, as vLLM's
 *     {@code --api-key} does; {@code null} for none
 * @param maxLoadedModels models held in memory at once, as Ollama's {@code OLLAMA_MAX_LOADED_MODELS};
 *     0 for no limit
 * @param loadTime how long loading a model into memory takes; with this and {@code maxLoadedModels}
 *     both zero every model is in memory from the start, else the node starts with none, as Ollama does
 * @param prefill the prompt-prefix cache and the prefill cost of what it does not hold
 * @param ollamaPrefill an Ollama chat whose final message is the assistant's continues that message,
 *     as Ollama's templates that leave it open do; else it gets a new answer
 */
public record SimConfig(String name, String bindHost, int port, List<String> models, int tokens,
                        Duration tokenDelay, Duration firstTokenDelay, int maxConcurrency, int maxQueue,
                        int embeddingDim, Faults faults, String apiKey, int maxLoadedModels, Duration loadTime,
                        Prefill prefill, boolean ollamaPrefill) {

    /**
     * The prompt-prefix cache ({@code --kv-cache-blocks}, {@code --kv-block-chars}) and the time each
     * prompt token it does not hold adds before the first token ({@code --prefill-per-token}).
     *
     * @param cacheBlocks blocks the cache holds; 0 for no cache (every prompt token is prefilled)
     * @param blockChars characters per block (a token being 4 characters)
     * @param perToken time per prompt token not found cached; zero for no prefill time
     */
    public record Prefill(int cacheBlocks, int blockChars, Duration perToken) {
        /** No cache, no prefill time: the first token comes after {@code firstTokenDelay} alone. */
        public static final Prefill NONE = new Prefill(0, 64, Duration.ZERO);

        /** Checks every value. */
        public Prefill {
            Objects.requireNonNull(perToken, "perToken");
            if (cacheBlocks < 0 || cacheBlocks > 10_000_000) {
                throw new InvalidSettingException("kvCacheBlocks", "must be 0 (no cache) to 10000000, was " + cacheBlocks);
            }
            if (blockChars < 1 || blockChars > 65_536) {
                throw new InvalidSettingException("kvBlockChars", "must be 1 to 65536, was " + blockChars);
            }
            if (perToken.isNegative() || perToken.compareTo(Duration.ofSeconds(1)) > 0) {
                throw new InvalidSettingException("prefillPerToken", "must be 0 to 1s, was " + Durations.format(perToken));
            }
        }
    }

    /** Configures a node whose Ollama chats continue a final assistant message. */
    public SimConfig(String name, String bindHost, int port, List<String> models, int tokens,
                     Duration tokenDelay, Duration firstTokenDelay, int maxConcurrency, int maxQueue,
                     int embeddingDim, Faults faults, String apiKey, int maxLoadedModels, Duration loadTime,
                     Prefill prefill) {
        this(name, bindHost, port, models, tokens, tokenDelay, firstTokenDelay, maxConcurrency, maxQueue,
                embeddingDim, faults, apiKey, maxLoadedModels, loadTime, prefill, true);
    }

    /** Configures a node without a prefix cache or prefill time. */
    public SimConfig(String name, String bindHost, int port, List<String> models, int tokens,
                     Duration tokenDelay, Duration firstTokenDelay, int maxConcurrency, int maxQueue,
                     int embeddingDim, Faults faults, String apiKey, int maxLoadedModels, Duration loadTime) {
        this(name, bindHost, port, models, tokens, tokenDelay, firstTokenDelay, maxConcurrency, maxQueue,
                embeddingDim, faults, apiKey, maxLoadedModels, loadTime, Prefill.NONE);
    }

    /** Configures a node that holds every model in memory from the start. */
    public SimConfig(String name, String bindHost, int port, List<String> models, int tokens,
                     Duration tokenDelay, Duration firstTokenDelay, int maxConcurrency, int maxQueue,
                     int embeddingDim, Faults faults, String apiKey) {
        this(name, bindHost, port, models, tokens, tokenDelay, firstTokenDelay, maxConcurrency, maxQueue,
                embeddingDim, faults, apiKey, 0, Duration.ZERO);
    }

    /** Checks every value. */
    public SimConfig {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(bindHost, "bindHost");
        models = List.copyOf(models);
        Objects.requireNonNull(tokenDelay, "tokenDelay");
        Objects.requireNonNull(firstTokenDelay, "firstTokenDelay");
        Objects.requireNonNull(faults, "faults");
        Objects.requireNonNull(loadTime, "loadTime");
        Objects.requireNonNull(prefill, "prefill");
        if (apiKey != null && apiKey.isBlank()) {
            apiKey = null;
        }
        if (name.isBlank()) {
            throw new InvalidSettingException("name", "must not be blank");
        }
        if (port < 0 || port > 65535) {
            throw new InvalidSettingException("port", "must be 0 to 65535, was " + port);
        }
        if (models.isEmpty() || models.stream().anyMatch(String::isBlank)) {
            throw new InvalidSettingException("models", "must name at least one model, none blank");
        }
        if (tokens < 1 || tokens > 100_000) {
            throw new InvalidSettingException("tokens", "must be 1 to 100000, was " + tokens);
        }
        if (tokenDelay.isNegative() || firstTokenDelay.isNegative()) {
            throw new InvalidSettingException(tokenDelay.isNegative() ? "tokenDelay" : "firstTokenDelay", "must not be negative");
        }
        if (maxConcurrency < 1) {
            throw new InvalidSettingException("maxConcurrency", "must be at least 1, was " + maxConcurrency);
        }
        if (maxQueue < 0) {
            throw new InvalidSettingException("maxQueue", "must not be negative, was " + maxQueue);
        }
        if (maxLoadedModels < 0 || maxLoadedModels > 1000) {
            throw new InvalidSettingException("maxLoadedModels", "must be 0 (no limit) to 1000, was " + maxLoadedModels);
        }
        if (loadTime.isNegative() || loadTime.compareTo(Duration.ofHours(1)) > 0) {
            throw new InvalidSettingException("loadTime", "must be 0 to 1h, was " + Durations.format(loadTime));
        }
        if (embeddingDim < 1 || embeddingDim > 8192) {
            throw new InvalidSettingException("embeddingDim", "must be 1 to 8192, was " + embeddingDim);
        }
    }

    /** Says whether models load on demand rather than all being in memory from the start. */
    public boolean loadsOnDemand() {
        return maxLoadedModels > 0 || !loadTime.isZero();
    }
}
