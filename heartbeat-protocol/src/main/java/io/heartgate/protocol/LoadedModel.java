package io.heartgate.protocol;

/**
 * One model a node holds in memory now, in the terms of Ollama's {@code /api/ps}: a request for it
 * is answered without loading it first. Only the name is required.
 *
 * @param name the model as the node lists it
 * @param size bytes the loaded model takes in all, or {@code null}
 * @param sizeVram bytes of it in GPU memory, or {@code null}
 * @param expiresAt when the server will unload it if unused, as the server wrote it, or {@code null}
 * @param contextLength the context it was loaded with, in tokens, or {@code null}
 */
public record LoadedModel(String name, Long size, Long sizeVram, String expiresAt, Integer contextLength) {
}
