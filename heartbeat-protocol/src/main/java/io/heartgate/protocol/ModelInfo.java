package io.heartgate.protocol;

import java.util.List;
import java.util.Objects;

/**
 * What a node reports of one model it can serve, in the terms of Ollama's {@code /api/tags}, so that
 * a scheduler can answer a catalogue merged over its nodes in that shape. Only the name is required;
 * the rest is {@code null} when the server does not say (vLLM, TGI and llama.cpp give names only).
 *
 * @param name the model as the node lists it
 * @param size bytes on disk, or {@code null}
 * @param digest the content digest, or {@code null}; two nodes with different digests disagree on what the name means
 * @param modifiedAt when the node last changed it, as the server wrote it, or {@code null}
 * @param details Ollama's {@code details}, or {@code null}
 * @param prefill whether the node's server continues a chat whose final message is the assistant's
 *                (a partial answer) rather than closing that turn and answering anew: {@code true} when
 *                it continues it, {@code false} when it closes the turn, {@code null} when unknown (the
 *                agent has not asked yet or could not tell, or an older agent sent the heartbeat). What
 *                lets another node go on with a stream cut mid-answer through Ollama's {@code /api/chat}
 */
public record ModelInfo(String name, Long size, String digest, String modifiedAt, Details details, Boolean prefill) {

    /** A model described without saying whether the server continues a final assistant message. */
    public ModelInfo(String name, Long size, String digest, String modifiedAt, Details details) {
        this(name, size, digest, modifiedAt, details, null);
    }

    /** Returns this description with {@code value} as its {@link #prefill()}. */
    public ModelInfo withPrefill(Boolean value) {
        return new ModelInfo(name, size, digest, modifiedAt, details, value);
    }

    /**
     * Ollama's description of a model's weights; each field {@code null} when not given.
     *
     * @param parentModel the model it was made from
     * @param format the weights' format ({@code gguf})
     * @param family the architecture family ({@code llama})
     * @param families every family it belongs to; empty when not given
     * @param parameterSize its size in parameters as written ({@code 8.0B})
     * @param quantizationLevel its quantisation ({@code Q4_K_M})
     */
    public record Details(String parentModel, String format, String family, List<String> families,
                          String parameterSize, String quantizationLevel) {
        /** Copies the list. */
        public Details {
            families = List.copyOf(Objects.requireNonNullElse(families, List.of()));
        }
    }
}
