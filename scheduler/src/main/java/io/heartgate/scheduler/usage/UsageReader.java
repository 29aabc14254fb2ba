package io.heartgate.scheduler.usage;

import java.nio.charset.StandardCharsets;

/**
 * Reads the token counts a node reported from the end of its response body: OpenAI's
 * {@code usage} object (a whole answer's, or the last chunk of a stream asked with
 * {@code stream_options.include_usage}), the same object with Anthropic's and OpenAI responses'
 * names ({@code input_tokens}, {@code output_tokens}; an Anthropic stream's last one may lack the
 * input, which its first event gave: {@link #read} at the start of a body finds it too), or
 * Ollama's final object ({@code prompt_eval_count}, {@code eval_count}). Only those bytes are looked at, backwards from the end, never the body
 * before them: a JSON parser cannot start in the middle of a document (the tail of a long answer
 * or an SSE stream), so the few fields are found by hand. Pure.
 */
public final class UsageReader {

    /** Token counts of one answer. */
    public record Usage(long prompt, long completion) {
        public long total() {
            return prompt + completion;
        }
    }

    private static final byte[] USAGE = bytes("\"usage\"");
    private static final byte[] PROMPT_TOKENS = bytes("\"prompt_tokens\"");
    private static final byte[] COMPLETION_TOKENS = bytes("\"completion_tokens\"");
    private static final byte[] INPUT_TOKENS = bytes("\"input_tokens\"");
    private static final byte[] OUTPUT_TOKENS = bytes("\"output_tokens\"");
    private static final byte[] EVAL_COUNT = bytes("\"eval_count\"");
    private static final byte[] PROMPT_EVAL_COUNT = bytes("\"prompt_eval_count\"");

    private UsageReader() {
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** Returns the counts in {@code tail[0, length)}, the end of a response body, or {@code null} if it has none. */
    public static Usage read(byte[] tail, int length) {
        for (int u = lastIndexOf(tail, length, USAGE); u >= 0; u = lastIndexOf(tail, u, USAGE)) {
            int i = skipSpace(tail, u + USAGE.length, length);
            if (i >= length || tail[i] != ':') {
                continue;
            }
            i = skipSpace(tail, i + 1, length);
            if (i >= length || tail[i] != '{') {
                continue; // "usage": null, in the chunks before the last of an OpenAI stream
            }
            int end = objectEnd(tail, i, length);
            if (end < 0) {
                return null; // cut off: the object is not all there
            }
            long prompt = numberAfter(tail, i, end, PROMPT_TOKENS);
            long completion = numberAfter(tail, i, end, COMPLETION_TOKENS);
            if (prompt < 0 && completion < 0) { // Anthropic's and OpenAI responses' names
                prompt = numberAfter(tail, i, end, INPUT_TOKENS);
                completion = numberAfter(tail, i, end, OUTPUT_TOKENS);
            }
            if (prompt >= 0 || completion >= 0) {
                return new Usage(Math.max(0, prompt), Math.max(0, completion));
            }
        }
        long completion = numberAfterLast(tail, length, EVAL_COUNT);
        long prompt = numberAfterLast(tail, length, PROMPT_EVAL_COUNT);
        if (completion < 0 && prompt < 0) {
            return null;
        }
        // Ollama leaves prompt_eval_count out when the whole prompt came from its cache.
        return new Usage(Math.max(0, prompt), Math.max(0, completion));
    }

    private static long numberAfterLast(byte[] b, int length, byte[] key) {
        for (int k = lastIndexOf(b, length, key); k >= 0; k = lastIndexOf(b, k, key)) {
            long n = numberAt(b, k + key.length, length);
            if (n >= 0) {
                return n;
            }
        }
        return -1;
    }

    private static long numberAfter(byte[] b, int from, int to, byte[] key) {
        for (int k = lastIndexOf(b, from, to, key); k >= from; k = lastIndexOf(b, from, k, key)) {
            long n = numberAt(b, k + key.length, to);
            if (n >= 0) {
                return n;
            }
        }
        return -1;
    }

    /** Returns the non-negative integer after {@code : } at {@code i}, or -1. */
    private static long numberAt(byte[] b, int i, int to) {
        i = skipSpace(b, i, to);
        if (i >= to || b[i] != ':') {
            return -1;
        }
        i = skipSpace(b, i + 1, to);
        long n = 0;
        int digits = 0;
        while (i < to && b[i] >= '0' && b[i] <= '9' && digits < 18) {
            n = n * 10 + (b[i++] - '0');
            digits++;
        }
        return digits == 0 ? -1 : n;
    }

    /** Returns the index after the object starting at {@code open}, or -1 when it does not end before {@code to}. */
    private static int objectEnd(byte[] b, int open, int to) {
        int depth = 0;
        boolean inString = false;
        for (int i = open; i < to; i++) {
            byte c = b[i];
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{') {
                depth++;
            } else if (c == '}' && --depth == 0) {
                return i + 1;
            }
        }
        return -1;
    }

    private static int skipSpace(byte[] b, int i, int to) {
        while (i < to && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
            i++;
        }
        return i;
    }

    /** Returns the last index below {@code before} where {@code key} starts, not escaped inside a string, or -1. */
    private static int lastIndexOf(byte[] b, int before, byte[] key) {
        return lastIndexOf(b, 0, before, key);
    }

    /** As {@link #lastIndexOf(byte[], int, byte[])}, looking no lower than {@code from}. */
    private static int lastIndexOf(byte[] b, int from, int before, byte[] key) {
        outer:
        for (int i = before - key.length; i >= from; i--) {
            if (b[i + 1] != key[1]) {
                continue; // every key opens with a quote, as most of JSON does: its first letter decides faster
            }
            for (int j = 0; j < key.length; j++) {
                if (b[i + j] != key[j]) {
                    continue outer;
                }
            }
            if (i > 0 && b[i - 1] == '\\') {
                continue; // \"usage\" inside generated text
            }
            return i;
        }
        return -1;
    }
}
