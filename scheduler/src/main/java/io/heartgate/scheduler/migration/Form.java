package io.heartgate.scheduler.migration;

import io.heartgate.scheduler.request.Endpoint;

/**
 * The streamed generations a cut answer can be continued on another node, by the shape of their
 * stream and of the continuation request: an OpenAI chat stream continues as a final assistant
 * message, a completion as its prompt followed by the text already sent.
 */
public enum Form {
    /** {@code /v1/chat/completions}, SSE: the text is {@code choices[0].delta.content}. */
    OPENAI_CHAT,
    /** {@code /v1/completions}, SSE: the text is {@code choices[0].text}. */
    OPENAI_COMPLETIONS,
    /** Ollama's {@code /api/generate} with {@code "raw": true}, NDJSON: the text is {@code response}. */
    OLLAMA_GENERATE,
    /** Ollama's {@code /api/chat}, NDJSON: the text is {@code message.content}. */
    OLLAMA_CHAT,
    /** Anthropic's {@code /v1/messages}, SSE of typed events: the text is in {@code text_delta}s. */
    ANTHROPIC_MESSAGES;

    /** Returns the form of a streamed answer to {@code endpoint}, or {@code null} when it cannot be continued. */
    public static Form of(Endpoint endpoint) {
        return switch (endpoint) {
            case OPENAI_CHAT -> OPENAI_CHAT;
            case OPENAI_COMPLETIONS -> OPENAI_COMPLETIONS;
            case OLLAMA_GENERATE -> OLLAMA_GENERATE;
            case OLLAMA_CHAT -> OLLAMA_CHAT;
            case ANTHROPIC_MESSAGES -> ANTHROPIC_MESSAGES;
            default -> null;
        };
    }

    /** Says whether the stream is OpenAI's SSE (events of {@code data:} lines, ended by {@code [DONE]}), else NDJSON. */
    public boolean sse() {
        return this != OLLAMA_GENERATE && this != OLLAMA_CHAT;
    }
}
