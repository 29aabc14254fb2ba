package io.heartgate.sim;

import java.util.ArrayDeque;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plays the simulated GPU: which generations run in one of the
 * {@code maxConcurrency} slots, which wait in a queue of at most {@code maxQueue}, which are refused as
 * busy, and when each token comes out.
 *
 * <p>Models load on demand when the configuration says so ({@link ModelMemory}): the queue is served in
 * order, and when its head names a model not in memory the head waits for its load, and everything
 * behind it waits too, so a load costs every queued request its time, as on a real GPU.
 *
 * <p>It knows nothing of HTTP so that the wire formats stay thin and tests can drive it on a fake
 * clock: a wire adapter opens a {@link Generation} with a {@link TokenSink} and writes what it is told.
 * Durations come from the injected nanosecond ticker and every wait from the injected {@link Timers}.
 * Not thread-safe: one thread (the server's event loop) makes every call and runs every timer.
 */
final class SimEngine {

    /** What admission decided for one generation: it runs now, waits for a slot, or is refused (slots and queue full). */
    enum Admission { RUNNING, WAITING, BUSY }

    private static final Logger log = LoggerFactory.getLogger(SimEngine.class);

    private final SimConfig config;
    private final Supplier<Faults> faults;
    private final LongSupplier nanos;
    /** {@link #busySlotNanos()} up to {@link #busySince}. */
    private long busySlotNanos;
    private long busySince;
    private final Timers timers;
    private final SimStats stats;
    private final TextSource text;
    private final PrefixCache prefixCache;
    private final ArrayDeque<Generation> waiting = new ArrayDeque<>();
    /** Models in memory, least recently used first, each with the generations running on it. */
    private final ModelMemory memory;
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
        this.prefixCache = new PrefixCache(config.prefill());
        this.memory = new ModelMemory(config, nanos, timers, stats, this::loadDone);
    }

    /** Returns the models served, loaded or not; never empty. */
    List<String> models() {
        return config.models();
    }

    /** Returns the models in memory now, most recently used first. */
    List<String> loadedModels() {
        return memory.loadedModels();
    }

    /** Returns the model being loaded now, or {@code null}. */
    String loading() {
        return memory.loading();
    }

    /** Returns the model answering requests that name none: the first one loaded. */
    String defaultModel() {
        return config.models().get(0);
    }

    /** Says whether {@code model} is loaded. */
    boolean serves(String model) {
        return config.models().contains(model);
    }

    /**
     * Returns the slot time held by running generations so far (their first-token waits included), in
     * nanoseconds: the running generations integrated over time. Over an interval, its growth divided by the interval and the slots is how busy the node
     * was, which shows how promptly whatever sends it work fills a slot that frees.
     */
    long busySlotNanos() {
        countBusySlots();
        return busySlotNanos;
    }

    private void countBusySlots() {
        long now = nanos.getAsLong();
        busySlotNanos += running * (now - busySince);
        busySince = now;
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
    Generation open(String model, int maxTokens, TokenSink sink) {
        return open(model, maxTokens, sink, "", false, 0);
    }

    /**
     * Opens a generation for the rendered {@code prompt} (a chat's messages when {@code chat}) whose
     * first token is token {@code start} of the node's answer: 0 for a new answer, more for one that
     * continues a partial answer (see {@link Continuation}). It sends at most {@code maxTokens} tokens and
     * never goes past the configured count in all, so it sends none when the partial answer was whole.
     */
    Generation open(String model, int maxTokens, TokenSink sink, String prompt, boolean chat, int start) {
        return new Generation(nextRequestNumber(), model, Math.min(Math.max(0, config.tokens() - start), maxTokens),
                sink, nanos.getAsLong(), prompt, chat, start, this);
    }

    /** Returns the node's prompt-prefix cache, for its counters. */
    PrefixCache prefixCache() {
        return prefixCache;
    }

    /**
     * Gives {@code g} a slot when one is free, else a place in the queue when there is one, else refuses
     * it; a refused generation never calls its sink, and the caller answers "busy".
     *
     * @throws IllegalStateException when {@code g} was admitted or cancelled before
     */
    Admission admit(Generation g) {
        if (g.phase != Generation.Phase.NEW) {
            throw new IllegalStateException("generation " + g.number + " is already " + g.phase);
        }
        // The queue holds what waits for a slot; a request at its head with a slot free waits only
        // for its model to load, and is neither refused for that nor counted (Ollama has taken it
        // out of its pending queue by then).
        boolean slotFree = waiting.isEmpty() && running < config.maxConcurrency();
        Generation head = waiting.peekFirst();
        int queued = head != null && running < config.maxConcurrency() && !memory.ready(head.model)
                ? waiting.size() - 1 : waiting.size();
        if (!slotFree && queued >= config.maxQueue()) {
            g.phase = Generation.Phase.DONE;
            stats.rejectedBusy.increment();
            return Admission.BUSY;
        }
        g.phase = Generation.Phase.WAITING;
        waiting.addLast(g);
        dispatch();
        return g.phase == Generation.Phase.RUNNING ? Admission.RUNNING : Admission.WAITING;
    }

    /**
     * Stops {@code g} because its client went away: a waiting one leaves the queue, a running one makes
     * no more tokens and frees its slot at once. Does nothing for a generation already over.
     */
    void cancel(Generation g) {
        Generation.Phase was = g.phase;
        g.phase = Generation.Phase.DONE;
        switch (was) {
            case WAITING -> {
                waiting.remove(g);
                dispatch(); // the head may have been waiting for room only this one's place held
            }
            case RUNNING -> {
                if (g.timerId >= 0) {
                    timers.cancel(g.timerId);
                    g.timerId = -1;
                }
                stats.cancelledStreams.increment();
                log.debug("Node {} stopped generating for a client that went away after {} tokens",
                        config.name(), g.sent);
                freeSlot(g);
            }
            default -> {
                // never admitted, or over already: nothing holds a slot or a place in the queue
            }
        }
    }

    /** Starts generations from the head of the queue while slots are free and their models are in memory. */
    private void dispatch() {
        while (running < config.maxConcurrency() && !waiting.isEmpty()) {
            Generation head = waiting.peekFirst();
            if (!memory.ready(head.model)) {
                return;
            }
            waiting.pollFirst();
            start(head);
        }
    }

    /** {@code model} is in memory: the generations that waited for it note how long, and the queue moves. */
    private void loadDone(String model, long loadStartNanos) {
        long now = nanos.getAsLong();
        for (Generation g : waiting) {
            if (g.model.equals(model)) {
                g.loadWaitNanos = now - Math.max(g.startNanos, loadStartNanos);
            }
        }
        dispatch();
    }

    private void start(Generation g) {
        countBusySlots();
        running++;
        memory.generating(g.model, 1);
        g.phase = Generation.Phase.RUNNING;
        Faults f = faults.get();
        if (f.hang()) {
            return; // holds the slot and never answers; cancel frees it
        }
        long first = f.firstTokenDelayMs() != null ? f.firstTokenDelayMs() : config.firstTokenDelay().toMillis();
        g.cachedChars = prefixCache.lookup(g.prompt);
        first += prefixCache.prefillMs(g.prompt.length() - g.cachedChars);
        g.dueNanos = nanos.getAsLong() + first * 1_000_000;
        if (first == 0) {
            emit(g);
        } else {
            g.timerId = timers.schedule(first, () -> emit(g));
        }
    }

    /**
     * Sends the next token and schedules the one after. With a zero token delay it loops instead of
     * scheduling: benchmarks run the sim that way so that it is never the bottleneck.
     *
     * <p>Each token is due a token delay after the previous one was due, not after it was sent: a
     * timer that fires late (a busy host) is made up on the next tokens, as a GPU's steps do not wait
     * for the host's timers. Otherwise every late timer would add to the answer's time, and a benchmark
     * whose sims share cores with the proxy under test would count the proxy's CPU as slower GPUs.
     */
    private void emit(Generation g) {
        g.timerId = -1;
        while (g.phase == Generation.Phase.RUNNING) {
            long delayMs = emitOne(g);
            if (delayMs > 0) {
                g.dueNanos += delayMs * 1_000_000;
                long waitNanos = g.dueNanos - nanos.getAsLong();
                if (waitNanos > 0) {
                    g.timerId = timers.schedule((waitNanos + 999_999) / 1_000_000, () -> emit(g));
                    return;
                }
            }
        }
    }

    /**
     * Sends one token, and ends the answer after its last (at once for an answer with none to send);
     * returns the delay before the next one, or 0 to go on at once (or when over).
     */
    private long emitOne(Generation g) {
        Faults f = faults.get();
        if (f.dropAfterTokens() >= 0 && g.sent >= f.dropAfterTokens()) {
            stats.droppedConnections.increment();
            g.phase = Generation.Phase.DONE;
            freeSlot(g);
            g.sink.cut(g);
            return 0;
        }
        if (g.sent < g.tokens) {
            String token = text.token(g.start + g.sent);
            g.sent++;
            stats.tokensSent.increment();
            g.sink.token(g, token);
            if (g.phase != Generation.Phase.RUNNING) {
                return 0; // the sink's write found the client gone
            }
            if (g.sent < g.tokens) {
                return f.tokenDelayMs() != null ? f.tokenDelayMs() : config.tokenDelay().toMillis();
            }
        }
        g.phase = Generation.Phase.DONE;
        stats.completed.increment();
        // its KV blocks stay, as vLLM keeps a finished request's
        prefixCache.answered(g.prompt, g.chat, g.start > 0, g.text());
        g.sink.finish(g);
        freeSlot(g);
        return 0;
    }

    private void freeSlot(Generation g) {
        countBusySlots();
        running--;
        memory.generating(g.model, -1);
        dispatch();
    }

    /** Returns the text answers are made of, for a generation's {@link Generation#text()}. */
    TextSource text() {
        return text;
    }

    /** Returns the engine's clock now, in nanoseconds. */
    long nanos() {
        return nanos.getAsLong();
    }

    /** Returns the node's settings. */
    SimConfig config() {
        return config;
    }
}
