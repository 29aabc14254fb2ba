package io.heartgate.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** Counts what the simulator did; thread-safe. Read by {@code GET /sim/stats} and {@code GET /metrics}. */
final class SimStats {

    private final Map<String, LongAdder> requestsByEndpoint = new ConcurrentHashMap<>();
    final LongAdder cancelledStreams = new LongAdder();
    final LongAdder droppedConnections = new LongAdder();
    final LongAdder tokensSent = new LongAdder();
    final LongAdder completed = new LongAdder();
    /** Generations admitted that continue a partial answer rather than start a new one. */
    final LongAdder continued = new LongAdder();
    final LongAdder injectedErrors = new LongAdder();
    final LongAdder rejectedBusy = new LongAdder();
    final LongAdder modelNotFound = new LongAdder();
    final LongAdder unauthorized = new LongAdder();
    final LongAdder modelLoads = new LongAdder();
    final LongAdder modelEvictions = new LongAdder();
    /**
     * Prompt tokens reported in usage figures (OpenAI {@code usage}, Ollama {@code prompt_eval_count},
     * Anthropic {@code input_tokens}).
     */
    final LongAdder usagePromptTokens = new LongAdder();
    /**
     * Completion tokens reported in usage figures (OpenAI {@code usage}, Ollama {@code eval_count},
     * Anthropic {@code output_tokens}).
     */
    final LongAdder usageCompletionTokens = new LongAdder();

    void request(String endpoint) {
        requestsByEndpoint.computeIfAbsent(endpoint, k -> new LongAdder()).increment();
    }

    Map<String, Long> requests() {
        Map<String, Long> out = new TreeMap<>();
        requestsByEndpoint.forEach((k, v) -> out.put(k, v.sum()));
        return out;
    }

    JsonObject toJson(String name, int inFlight, int queued, long busySlotNanos, List<String> loaded) {
        JsonObject requests = new JsonObject();
        requests().forEach(requests::put);
        return new JsonObject()
                .put("name", name)
                .put("requests", requests)
                .put("inFlight", inFlight)
                .put("queued", queued)
                .put("busySlotSeconds", busySlotNanos / 1e9)
                .put("completed", completed.sum())
                .put("continued", continued.sum())
                .put("unauthorized", unauthorized.sum())
                .put("cancelledStreams", cancelledStreams.sum())
                .put("droppedConnections", droppedConnections.sum())
                .put("tokensSent", tokensSent.sum())
                .put("injectedErrors", injectedErrors.sum())
                .put("rejectedBusy", rejectedBusy.sum())
                .put("modelNotFound", modelNotFound.sum())
                .put("modelLoads", modelLoads.sum())
                .put("modelEvictions", modelEvictions.sum())
                .put("usage", new JsonObject().put("promptTokens", usagePromptTokens.sum())
                        .put("completionTokens", usageCompletionTokens.sum()))
                .put("loaded", new JsonArray(loaded));
    }
}
