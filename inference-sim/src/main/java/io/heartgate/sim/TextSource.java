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
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < count; i++) {
            sb.append(token(i));
        }
        return sb.toString();
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
