package io.heartgate.sim;

/**
 * One generation request, from admission to its last token. Its state changes only inside the
 * engine ({@link SimEngine}); wire adapters read it when the engine calls their {@link TokenSink}.
 */
final class Generation {

    /** Where a generation stands in the engine. */
    enum Phase { NEW, WAITING, RUNNING, DONE }

    final long number;
    final String model;
    final int tokens;
    final TokenSink sink;
    final long startNanos;
    Phase phase = Phase.NEW;
    int sent;
    long timerId = -1;
    /** When the token being waited for is due, on the engine's clock. */
    long dueNanos;
    long loadWaitNanos;
    /** The leading characters of its prompt found in the prefix cache when it took its slot. */
    int cachedChars;
    final String prompt;
    final boolean chat;
    /** The index of its first token in the node's answer; 0 unless it continues a partial answer. */
    final int start;

    private final SimEngine engine;

    Generation(long number, String model, int tokens, TokenSink sink, long startNanos, String prompt,
               boolean chat, int start, SimEngine engine) {
        this.engine = engine;
        this.prompt = prompt;
        this.chat = chat;
        this.start = start;
        this.number = number;
        this.model = model;
        this.tokens = tokens;
        this.sink = sink;
        this.startNanos = startNanos;
    }

    /** Returns the request number from {@link #nextRequestNumber()}. */
    long number() {
        return number;
    }

    /** Returns the model generating. */
    String model() {
        return model;
    }

    /** Returns how long the generation waited for its model to load; 0 when it was in memory. */
    long loadWaitNanos() {
        return loadWaitNanos;
    }

    /**
     * Returns the share of its rendered prompt, 0 to 1, that the prefix cache held when it took its
     * slot; 0 before then, and for an empty prompt.
     */
    double cachedPromptShare() {
        return prompt.isEmpty() ? 0 : (double) cachedChars / prompt.length();
    }

    /** Returns the tokens sent so far. */
    int sent() {
        return sent;
    }

    /** Returns the text of the tokens sent so far, in this answer. */
    String text() {
        return engine.text().text(start, sent);
    }

    /** Returns the nanoseconds since the generation was opened, time in the queue included. */
    long elapsedNanos() {
        return engine.nanos() - startNanos;
    }

    /**
     * Returns why generation ended in the words both APIs use: {@code "stop"} when the model said all
     * it had (the configured count, a partial answer it continued included), {@code "length"} when the
     * request's token limit cut it short.
     */
    String finishReason() {
        return start + sent >= engine.config().tokens() ? "stop" : "length";
    }
}
