package io.heartgate.agent.probe;

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
 */
public record ProbeResult(boolean healthy, Backend backend, List<String> models, Load load, String detail) {

    /** Copies the list. */
    public ProbeResult {
        models = List.copyOf(models);
    }

    /** Returns a result for a server that failed its health check. */
    public static ProbeResult down(Backend backend, List<String> lastModels, String detail) {
        return new ProbeResult(false, backend, lastModels, Load.UNKNOWN, detail);
    }
}
