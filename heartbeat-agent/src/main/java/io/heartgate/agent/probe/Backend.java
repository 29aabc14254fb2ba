package io.heartgate.agent.probe;

import io.heartgate.protocol.InvalidSettingException;
import java.util.Locale;

/** Names the kinds of inference server the agent knows how to probe. */
public enum Backend {
    /** Detect the kind at start and again whenever the server comes back after failing. */
    AUTO,
    /** Ollama: {@code /api/version}, {@code /api/tags}, {@code /api/ps}. */
    OLLAMA,
    /** Any OpenAI-compatible server: {@code /v1/models} is both health and models. */
    OPENAI,
    /** vLLM: {@code /health}, {@code /v1/models}, {@code /metrics}. */
    VLLM,
    /** Hugging Face text-generation-inference: {@code /health}, {@code /info}, {@code /metrics}. */
    TGI,
    /** llama.cpp server: {@code /health}, {@code /v1/models}, {@code /metrics} or {@code /slots}. */
    LLAMACPP;

    /** Returns the lower-case name used on the command line and in heartbeats. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Parses a command-line value such as {@code vllm}.
     *
     * @throws IllegalArgumentException listing the accepted values
     */
    public static Backend parse(String value) {
        for (Backend b : values()) {
            if (b.label().equals(value == null ? "" : value.trim().toLowerCase(Locale.ROOT))) {
                return b;
            }
        }
        throw new InvalidSettingException("backend", "'" + value + "' is not a backend; use auto, ollama, openai, vllm, tgi or llamacpp");
    }
}
