package io.heartgate.sim;

import java.util.ArrayDeque;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plays the simulated GPU: which models are loaded, which generations run in one of the
 * {@code maxConcurrency} slots, which wait in a queue of at most {@code maxQueue}, which are refused as
 * busy, and when each token comes out.
 *
 * <p>It knows nothing of HTTP so that the wire formats stay thin and tests can drive it on a fake
 * clock: a wire adapter opens a {@link Generation} with a {@link TokenSink} and writes what it is told.
 * Durations come from the injected nanosecond ticker and every wait from the injected {@link Timers}.
 * Not thread-safe: one thread (the server's event loop) makes every call and runs every timer.
 */
final class SimEngine {

    /** What admission decided for one generation. */
    enum Admission {
        /** A slot was free: the generation runs now. */
        RUNNING,
        /** Every slot was taken: the generation waits for one. */
        WAITING,
        /** Slots and queue were full: the generation is refused and never runs. */
        BUSY
    }

    private enum Phase { NEW, WAITING, RUNNING, DONE }

    private static final Logger log = LoggerFactory.getLogger(SimEngine.class);

    private final SimConfig config;
    private final Supplier<Faults> faults;
    private final LongSupplier nanos;
    private final Timers timers;
    private final SimStats stats;
    private final TextSource text;
    private final ArrayDeque<Generation> waiting = new ArrayDeque<>();
    private int running;
    private long numbered;

    /**
     * Creates an idle engine.
     *
     * @param faults read afresh at each decision, so a change applies from the next token on
     * @param nanos monotonic nanoseconds, for the durations reported
     */
    SimEngine(SimConfig config, Supplier<Faults> faults, LongSupplier nanos, Timers timers, SimStats stats) {
        this.config = config;
        this.faults = faults;
        this.nanos = nanos;
        this.timers = timers;
        this.stats = stats;
        this.text = new TextSource(config.name());
    }

    /** Returns the models loaded, all of them from the start; never empty. */
    List<String> models() {
        return config.models();
    }

    /** Returns the model answering requests that name none: the first one loaded. */
    String defaultModel() {
        return config.models().get(0);
    }

    /** Says whether {@code model} is loaded. */
    boolean serves(String model) {
        return config.models().contains(model);
    }

    /** Returns the generations holding a slot now. */
    int running() {
        return running;
    }

    /** Returns the generations waiting for a slot now. */
    int waiting() {
        return waiting.size();
    }

    /** Returns the number of slots. */
    int maxConcurrency() {
        return config.maxConcurrency();
    }

    /** Returns how many generations may wait before more are refused. */
    int maxQueue() {
        return config.maxQueue();
    }

    /** Returns the next request number (1, 2, ...); generations and embeddings share the sequence. */
    long nextRequestNumber() {
        return ++numbered;
    }

    /** Returns the embedding of {@code input}: a deterministic unit vector of the configured length. */
    double[] embedding(String model, String input) {
        return TextSource.embedding(model, input, config.embeddingDim());
    }

    /**
     * Opens a generation of at most {@code maxTokens} tokens (the configured count caps it), numbers it
     * and starts its clock; it waits for {@link #admit} before it takes a slot.
     */
    Generation open(int maxTokens, TokenSink sink) {
        return new Generation(nextRequestNumber(), Math.min(config.tokens(), maxTokens), sink, nanos.getAsLong());
    }

    /**
     * Gives {@code g} a slot when one is free, else a place in the queue when there is one, else refuses
     * it; a refused generation never calls its sink, and the caller answers "busy".
     *
     * @throws IllegalStateException when {@code g} was admitted or cancelled before
     */
    Admission admit(Generation g) {
        if (g.phase != Phase.NEW) {
            throw new IllegalStateException("generation " + g.number + " is already " + g.phase);
        }
        if (running < config.maxConcurrency()) {
            start(g);
            return Admission.RUNNING;
        }
        if (waiting.size() < config.maxQueue()) {
            g.phase = Phase.WAITING;
            waiting.addLast(g);
            return Admission.WAITING;
        }
        g.phase = Phase.DONE;
        stats.rejectedBusy.increment();
        return Admission.BUSY;
    }

    /**
     * Stops {@code g} because its client went away: a waiting one leaves the queue, a running one makes
     * no more tokens and frees its slot at once. Does nothing for a generation already over.
     */
    void cancel(Generation g) {
        Phase was = g.phase;
        g.phase = Phase.DONE;
        switch (was) {
            case WAITING -> waiting.remove(g);
            case RUNNING -> {
                if (g.timerId >= 0) {
                    timers.cancel(g.timerId);
                    g.timerId = -1;
                }
                stats.cancelledStreams.increment();
                log.debug("Node {} stopped generating for a client that went away after {} tokens",
                        config.name(), g.sent);
                freeSlot();
            }
            default -> {
                // never admitted, or over already: nothing holds a slot or a place in the queue
            }
        }
    }

    private void start(Generation g) {
        running++;
        g.phase = Phase.RUNNING;
        Faults f = faults.get();
        if (f.hang()) {
            return; // holds the slot and never answers; cancel frees it
        }
        long first = f.firstTokenDelayMs() != null ? f.firstTokenDelayMs() : config.firstTokenDelay().toMillis();
        if (first == 0) {
            emit(g);
        } else {
            g.timerId = timers.schedule(first, () -> emit(g));
        }
    }

    /**
     * Sends the next token and schedules the one after. With a zero token delay it loops instead of
     * scheduling: benchmarks run the sim that way so that it is never the bottleneck.
     */
    private void emit(Generation g) {
        g.timerId = -1;
        while (g.phase == Phase.RUNNING) {
            long delayMs = emitOne(g);
            if (delayMs > 0) {
                g.timerId = timers.schedule(delayMs, () -> emit(g));
                return;
            }
        }
    }

    /** Sends one token; returns the delay before the next one, or 0 to go on at once (or when over). */
    private long emitOne(Generation g) {
        Faults f = faults.get();
        if (f.dropAfterTokens() >= 0 && g.sent >= f.dropAfterTokens()) {
            stats.droppedConnections.increment();
            g.phase = Phase.DONE;
            freeSlot();
            g.sink.cut(g);
            return 0;
        }
        String token = text.token(g.sent);
        g.sent++;
        stats.tokensSent.increment();
        g.sink.token(g, token);
        if (g.phase != Phase.RUNNING) {
            return 0; // the sink's write found the client gone
        }
        if (g.sent < g.tokens) {
            return f.tokenDelayMs() != null ? f.tokenDelayMs() : config.tokenDelay().toMillis();
        }
        g.phase = Phase.DONE;
        stats.completed.increment();
        g.sink.finish(g);
        freeSlot();
        return 0;
    }

    private void freeSlot() {
        running--;
        while (running < config.maxConcurrency() && !waiting.isEmpty()) {
            start(waiting.pollFirst());
        }
    }

    /**
     * One generation request, from admission to its last token. Its state changes only inside the
     * engine; wire adapters read it when the engine calls their {@link TokenSink}.
     */
    final class Generation {
        private final long number;
        private final int tokens;
        private final TokenSink sink;
        private final long startNanos;
        private Phase phase = Phase.NEW;
        private int sent;
        private long timerId = -1;

        private Generation(long number, int tokens, TokenSink sink, long startNanos) {
            this.number = number;
            this.tokens = tokens;
            this.sink = sink;
            this.startNanos = startNanos;
        }

        /** Returns the request number from {@link #nextRequestNumber()}. */
        long number() {
            return number;
        }

        /** Returns the tokens sent so far. */
        int sent() {
            return sent;
        }

        /** Returns the text of the tokens sent so far. */
        String text() {
            return text.text(sent);
        }

        /** Returns the nanoseconds since the generation was opened, time in the queue included. */
        long elapsedNanos() {
            return nanos.getAsLong() - startNanos;
        }

        /**
         * Returns why generation ended in the words both APIs use: {@code "stop"} when the model said all
         * it had (the configured count), {@code "length"} when the request's token limit cut it short.
         */
        String finishReason() {
            return sent >= config.tokens() ? "stop" : "length";
        }
    }
}
