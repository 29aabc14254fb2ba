package io.heartgate.sim;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A prompt-prefix cache as vLLM keeps its KV blocks: a prompt is cut into whole blocks of
 * {@code blockChars} characters (characters stand in for tokens), each named by a hash chained over
 * every block before it, so a block matches only when the whole prompt up to it does; the cache
 * holds the {@code blocks} most recently used. A lookup counts the prompt's tokens as queried and
 * its cached prefix as hit (a token being 4 characters), in vLLM v1's terms, and then caches every
 * whole block of the prompt. Not thread-safe: the engine's thread calls it.
 */
final class PrefixCache {

    /** Characters per token, for the cache's counters and the prefill time. */
    static final int CHARS_PER_TOKEN = 4;

    private final int blockChars;
    private final long perTokenNanos;
    private final LinkedHashMap<Long, Boolean> lru;
    private long queriedTokens;
    private long hitTokens;

    /** Creates the cache and prefill cost of {@code prefill}. */
    PrefixCache(SimConfig.Prefill prefill) {
        this(prefill.cacheBlocks(), prefill.blockChars(), prefill.perToken().toNanos());
    }

    /** Creates a cache of {@code blocks} blocks (0: nothing is ever cached) of {@code blockChars} characters, no prefill cost. */
    PrefixCache(int blocks, int blockChars) {
        this(blocks, blockChars, 0);
    }

    private PrefixCache(int blocks, int blockChars, long perTokenNanos) {
        this.blockChars = blockChars;
        this.perTokenNanos = perTokenNanos;
        this.lru = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                return size() > blocks;
            }
        };
    }

    /** Returns the tokens of {@code prompt}, rounded up. */
    static int tokens(int chars) {
        return (chars + CHARS_PER_TOKEN - 1) / CHARS_PER_TOKEN;
    }

    /**
     * Looks {@code prompt} up: returns how many of its leading characters are cached (whole blocks,
     * from the start, up to the first block not cached), and caches all its whole blocks.
     */
    int lookup(String prompt) {
        int whole = prompt.length() / blockChars;
        long hash = 0xcbf29ce484222325L;
        int cachedBlocks = 0;
        boolean matching = true;
        for (int b = 0; b < whole; b++) {
            hash = chain(hash, prompt, b * blockChars, (b + 1) * blockChars);
            if (matching && lru.get(hash) != null) {
                cachedBlocks++;
            } else {
                matching = false;
                lru.put(hash, Boolean.TRUE);
            }
        }
        int cachedChars = cachedBlocks * blockChars;
        queriedTokens += tokens(prompt.length());
        hitTokens += cachedChars / CHARS_PER_TOKEN;
        return cachedChars;
    }

    /**
     * Caches the blocks of a finished generation, prompt and answer, as vLLM keeps a request's full
     * blocks (generated ones too) for the next prompt that starts the same way: a chat's next turn,
     * whose messages render this {@code prompt}, then the answer as an {@code assistant} message.
     * A completion's answer simply follows its prompt, and so does a {@code continued} chat's: its
     * prompt ends inside the assistant message that the answer completes. Counts no query.
     */
    void answered(String prompt, boolean chat, boolean continued, String answer) {
        String text = !chat ? prompt + answer
                : continued ? prompt + answer + "\n" : prompt + "<assistant>\n" + answer + "\n";
        int whole = text.length() / blockChars;
        long hash = 0xcbf29ce484222325L;
        for (int b = 0; b < whole; b++) {
            hash = chain(hash, text, b * blockChars, (b + 1) * blockChars);
            lru.put(hash, Boolean.TRUE);
        }
    }

    /**
     * Returns the time prompt processing adds for {@code uncachedChars} characters of a prompt that
     * {@link #lookup} did not find cached, in ms.
     */
    long prefillMs(int uncachedChars) {
        return perTokenNanos * tokens(uncachedChars) / 1_000_000;
    }

    /** FNV-1a over {@code s[from, to)}, seeded with the hash of everything before it. */
    private static long chain(long previous, String s, int from, int to) {
        long h = previous ^ 0x100000001b3L * (to - from);
        for (int i = from; i < to; i++) {
            h ^= s.charAt(i);
            h *= 0x100000001b3L;
        }
        return h;
    }

    /** Returns the prompt tokens looked up so far (vLLM's {@code prefix_cache_queries}). */
    long queriedTokens() {
        return queriedTokens;
    }

    /** Returns the tokens found cached so far (vLLM's {@code prefix_cache_hits}). */
    long hitTokens() {
        return hitTokens;
    }

    /** Returns the blocks held now. */
    int blocks() {
        return lru.size();
    }
}
