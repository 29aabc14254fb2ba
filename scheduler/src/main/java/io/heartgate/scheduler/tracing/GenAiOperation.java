package io.heartgate.scheduler.tracing;

import io.heartgate.scheduler.request.Endpoint;

/** The GenAI semantic conventions' {@code gen_ai.operation.name} of each endpoint that runs a model. */
final class GenAiOperation {

    private GenAiOperation() {
    }

    /** Returns the operation {@code endpoint} asks a model for, or {@code null} when it asks none (a listing, a pull). */
    static String of(Endpoint endpoint) {
        return switch (endpoint) {
            case OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES, OLLAMA_CHAT -> "chat";
            case OPENAI_COMPLETIONS, OLLAMA_GENERATE -> "text_completion";
            case OPENAI_EMBEDDINGS, OLLAMA_EMBED -> "embeddings";
            default -> null;
        };
    }
}
