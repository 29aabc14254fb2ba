package io.heartgate.loadgen;

/**
 * Says what one line of a streamed answer carried.
 *
 * @param content generated text; empty when the line carried none (a role chunk, the final object, a blank line)
 * @param done whether the line ends the answer: Ollama's {@code done:true} object or SSE {@code data: [DONE]}
 * @param loadNanos Ollama's {@code load_duration} in nanoseconds, or -1 where the line has none
 * @param promptTokens the prompt length the server reports ({@code prompt_eval_count},
 *     {@code usage.prompt_tokens}), or -1 where the line has none
 * @param error the server's in-stream error message, or null for none
 */
public record StreamEvent(String content, boolean done, long loadNanos, int promptTokens, String error) {

    /** A line that carries nothing of interest. */
    public static final StreamEvent NOTHING = new StreamEvent("", false, -1, -1, null);

    /** Normalises a null content to empty. */
    public StreamEvent {
        content = content == null ? "" : content;
    }

    /** Says whether the line carried generated text, which is what time to first token waits for. */
    public boolean hasContent() {
        return !content.isEmpty();
    }
}
