package io.heartgate.sim;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Makes the simulator's deterministic output: token texts that name the answering node, and
 * unit-length embedding vectors derived from the input text. Stateless and thread-safe.
 */
final class TextSource {

    private static final List<String> WORDS = List.of(
            " the", " GPU", " streams", " tokens", " quickly", " while", " the", " scheduler", " routes",
            " each", " request", " to", " a", " live", " node", ".");

    private final String name;

    TextSource(String name) {
        this.name = name;
    }

    /** Returns token {@code index} (0-based); token 0 names the node, such as {@code [gpu-a]}. */
    String token(int index) {
        if (index == 0) {
            return "[" + name + "]";
        }
        return WORDS.get((index - 1) % WORDS.size());
    }

    /** Returns the whole text of {@code count} tokens. */
    String text(int count) {
        return text(0, count);
    }

    /** Returns the text of {@code count} tokens from token {@code from} on. */
    String text(int from, int count) {
        StringBuilder sb = new StringBuilder();
        for (int i = from; i < from + count; i++) {
            sb.append(token(i));
        }
        return sb.toString();
    }

    /**
     * Returns how many tokens of a sim's answer {@code text} holds: k when it is the first k tokens of
     * some node's answer (a {@code [NAME]} marker, counted as 1, then the words in order), trailing
     * whitespace ignored, so that a text cut after {@code " the "} or {@code " the"} both count; -1
     * when it is not sim output. A stream cut mid-way and handed to another node as a continuation
     * tells that node where to go on. The marker ends at its first {@code ]}, so a node name holding
     * one is not recognised.
     */
    static int continuedFrom(String text) {
        if (text == null || !text.startsWith("[")) {
            return -1;
        }
        String s = text.stripTrailing();
        int close = s.indexOf(']');
        if (close < 2) {
            return -1; // no marker, or one without a name
        }
        int words = wordsAt(s, close + 1);
        return words < 0 ? -1 : 1 + words;
    }

    /** Returns how many of the words in order make up {@code s} from {@code pos} to its end, or -1. */
    private static int wordsAt(String s, int pos) {
        int n = 0;
        while (pos < s.length()) {
            String word = WORDS.get(n % WORDS.size());
            if (!s.startsWith(word, pos)) {
                return -1;
            }
            pos += word.length();
            n++;
        }
        return n;
    }

    /** Returns a rough token count for a prompt: its whitespace-separated words, at least 1. */
    static int promptTokens(String prompt) {
        if (prompt == null || prompt.isBlank()) {
            return 1;
        }
        return prompt.trim().split("\\s+").length;
    }

    /** Returns a deterministic unit vector for {@code model} and {@code input}. */
    static double[] embedding(String model, String input, int dim) {
        byte[] bytes = (model + "\u0000" + input).getBytes(StandardCharsets.UTF_8);
        long seed = 1125899906842597L;
        for (byte b : bytes) {
            seed = 31 * seed + b;
        }
        double[] v = new double[dim];
        double norm = 0;
        for (int i = 0; i < dim; i++) {
            // xorshift: cheap, deterministic and spread well enough for fake vectors
            seed ^= seed << 13;
            seed ^= seed >>> 7;
            seed ^= seed << 17;
            v[i] = (seed % 10_000) / 10_000.0;
            norm += v[i] * v[i];
        }
        norm = Math.sqrt(norm);
        for (int i = 0; i < dim; i++) {
            v[i] = norm == 0 ? 0 : v[i] / norm;
        }
        return v;
    }
}
