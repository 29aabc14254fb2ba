package io.heartgate.loadgen;

import java.util.SplittableRandom;

/**
 * Makes the user messages of a run: words from a fixed vocabulary, chosen by the run's seed, the
 * conversation and the turn, so a rerun sends byte-for-byte the same prompts. Pure and thread-safe.
 */
public final class Prompts {

    private static final String[] WORDS = {
        "gateway", "token", "stream", "model", "cache", "node", "latency", "queue", "answer", "prompt",
        "weight", "batch", "kernel", "memory", "tensor", "layer", "vector", "shard", "heartbeat", "route",
        "scheduler", "request", "reply", "window", "context", "budget", "replica", "cluster", "signal", "metric",
        "explain", "compare", "describe", "summarise", "list", "why", "how", "when", "which", "what",
        "fast", "slow", "large", "small", "busy", "idle", "warm", "cold", "local", "remote",
        "the", "a", "of", "to", "in", "for", "with", "on", "and", "or", "is", "are", "this", "that",
    };

    /** Characters per token, as inference-sim counts them for its prefix cache and prefill time. */
    public static final int CHARS_PER_TOKEN = 4;

    private Prompts() {
    }

    /** Returns a user message of {@code words} words (at least 1) for turn {@code turn} (from 1) of a conversation. */
    public static String user(long seed, int conversation, int turn, int words) {
        SplittableRandom random = random(seed, conversation, turn);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.max(1, words); i++) {
            if (i > 0) {
                b.append(' ');
            }
            b.append(WORDS[random.nextInt(WORDS.length)]);
        }
        return b.append('?').toString();
    }

    /**
     * Returns a user message of exactly {@code chars} characters (at least 1) for turn {@code turn} of
     * a conversation: the words {@link #user} draws for the same arguments, as many as fill it, the
     * last one cut short, ended with {@code ?}. For prompts of a set length in tokens, whatever the
     * words drawn.
     */
    public static String ofLength(long seed, int conversation, int turn, int chars) {
        int length = Math.max(1, chars);
        SplittableRandom random = random(seed, conversation, turn);
        StringBuilder b = new StringBuilder(length + 16);
        while (b.length() < length - 1) {
            if (b.length() > 0) {
                b.append(' ');
            }
            b.append(WORDS[random.nextInt(WORDS.length)]);
        }
        b.setLength(length - 1);
        return b.append('?').toString();
    }

    private static SplittableRandom random(long seed, int conversation, int turn) {
        return new SplittableRandom(seed * 0x9E3779B97F4A7C15L + conversation * 1_000_003L + turn);
    }
}
