package io.heartgate.scheduler.table;

/**
 * Normalises model names the way Ollama does, so that {@code llama3} and {@code llama3:latest} name
 * the same model: a name without a tag gets {@code :latest}. Applied to advertised and requested
 * names alike, so OpenAI-style names ({@code meta-llama/Llama-3.1-8B}) still match each other.
 */
public final class ModelNames {

    private ModelNames() {
    }

    /** Returns the normalised name; {@code null} stays {@code null}. */
    public static String normalize(String name) {
        if (name == null) {
            return null;
        }
        String n = name.trim();
        // A ':' after the last '/' is a tag; one before it belongs to a host (registry:port/model).
        int slash = n.lastIndexOf('/');
        return n.indexOf(':', slash + 1) >= 0 ? n : n + ":latest";
    }
}
