package io.heartgate.agent.probe;

import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.protocol.Load;
import java.util.List;

/**
 * Holds what one probe of the inference server found.
 *
 * @param healthy whether the health check passed in time
 * @param backend the backend probed, or {@code null} when auto-detection has not succeeded yet
 * @param models the models found; empty when unknown
 * @param load the load figures found; {@link Load#UNKNOWN} when the backend exposes none
 * @param detail why the server is unhealthy, or {@code "ok"}
 * @param modelInfo what the server says of each model (Ollama's {@code /api/tags}, and {@code /api/show}'s
 *                  prefill); empty when it says nothing
 * @param loaded the models it holds in memory now (Ollama's {@code /api/ps}); empty when unknown
 * @param capacity requests the server says it generates at once, or {@code null} when it does not say
 */
public record ProbeResult(boolean healthy, Backend backend, List<String> models, Load load, String detail,
                          List<ModelInfo> modelInfo, List<LoadedModel> loaded, Integer capacity) {

    /** Copies the lists. */
    public ProbeResult {
        models = List.copyOf(models);
        modelInfo = List.copyOf(modelInfo);
        loaded = List.copyOf(loaded);
    }

    /** A result with names only, as every backend but Ollama gives. */
    public ProbeResult(boolean healthy, Backend backend, List<String> models, Load load, String detail) {
        this(healthy, backend, models, load, detail, List.of(), List.of(), null);
    }

    /** Returns a result for a server that failed its health check. */
    public static ProbeResult down(Backend backend, List<String> lastModels, String detail) {
        return new ProbeResult(false, backend, lastModels, Load.UNKNOWN, detail);
    }
}
