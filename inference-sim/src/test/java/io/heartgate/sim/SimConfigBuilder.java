package io.heartgate.sim;

import java.time.Duration;
import java.util.List;

/**
 * Builds simulator configurations for tests: loopback, a free port, 8 tokens of 1 ms each, 4 slots
 * and 64 places in the queue, no faults. Shared with other modules' tests through the test-jar.
 */
public final class SimConfigBuilder {

    private final String name;
    private final List<String> models;
    private int tokens = 8;
    private Duration tokenDelay = Duration.ofMillis(1);
    private Duration firstTokenDelay = Duration.ofMillis(1);
    private int maxConcurrency = 4;
    private int maxQueue = 64;
    private Faults faults = Faults.NONE;
    private String apiKey;
    private int maxLoadedModels;
    private Duration loadTime = Duration.ZERO;
    private boolean ollamaPrefill = true;

    public SimConfigBuilder(String name, List<String> models) {
        this.name = name;
        this.models = models;
    }

    /** Sets the tokens per request, the time per token and the time before the first. */
    public SimConfigBuilder timing(int tokenCount, Duration perToken, Duration firstToken) {
        this.tokens = tokenCount;
        this.tokenDelay = perToken;
        this.firstTokenDelay = firstToken;
        return this;
    }

    /** Sets the requests generated at once and the ones that may wait. */
    public SimConfigBuilder concurrency(int slots, int queue) {
        this.maxConcurrency = slots;
        this.maxQueue = queue;
        return this;
    }

    /** Makes models load on demand: at most {@code max} in memory (0 = no limit), each load taking {@code time}. */
    public SimConfigBuilder loading(int max, Duration time) {
        this.maxLoadedModels = max;
        this.loadTime = time;
        return this;
    }

    public SimConfigBuilder apiKey(String key) {
        this.apiKey = key;
        return this;
    }

    private SimConfig.Prefill prefill = SimConfig.Prefill.NONE;

    /** Whether an Ollama chat continues a final assistant message (the default) or answers it anew. */
    public SimConfigBuilder ollamaPrefill(boolean on) {
        this.ollamaPrefill = on;
        return this;
    }

    public SimConfigBuilder faults(Faults f) {
        this.faults = f;
        return this;
    }

    /** A prefix cache of {@code blocks} blocks of {@code blockChars}, and {@code perToken} per prompt token it lacks. */
    public SimConfigBuilder prefill(int blocks, int blockChars, Duration perToken) {
        this.prefill = new SimConfig.Prefill(blocks, blockChars, perToken);
        return this;
    }

    public SimConfig build() {
        return new SimConfig(name, "127.0.0.1", 0, models, tokens, tokenDelay, firstTokenDelay, maxConcurrency, maxQueue,
                8, faults, apiKey, maxLoadedModels, loadTime, prefill, ollamaPrefill);
    }
}
