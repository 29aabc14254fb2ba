package io.heartgate.loadgen;

import io.heartgate.protocol.InvalidSettingException;
import java.util.Map;

/**
 * What ties a run's conversations to a cache, as real clients do: a few shared system prompts that
 * every conversation starts with ({@code --system-prompts}, {@code --system-words} or
 * {@code --system-tokens}), and a session header that a share of conversations send
 * ({@code --session-header}, {@code --session-share}), the rest sending nothing. Which conversations
 * send it is fixed by their index, spread evenly (golden-ratio steps), so a rerun is the same.
 * Immutable.
 *
 * @param systemPrompts how many distinct system prompts (0: none)
 * @param systemWords words per system prompt, when {@code systemTokens} is 0
 * @param systemTokens the length of each system prompt in tokens of {@value Prompts#CHARS_PER_TOKEN}
 *     characters (exactly that many characters), or 0 for {@code systemWords} words
 * @param systemSeed the seed of the system prompts' words, or {@code null} for the run's seed: with
 *     it set, runs of different seeds (other arrivals, other user messages) share their system prompts
 * @param header the session header's name, or {@code null} for none
 * @param share the fraction of conversations that send it, 0 to 1
 */
public record Sessions(int systemPrompts, int systemWords, int systemTokens, Long systemSeed, String header,
                       double share) {

    /** No system prompt, no session header: what runs had before. */
    public static final Sessions NONE = new Sessions(0, 0, null, 0);

    /** The most {@code systemTokens}: a million characters. */
    public static final int MAX_SYSTEM_TOKENS = 250_000;

    /** Sessions whose system prompts are {@code systemWords} words long. */
    public Sessions(int systemPrompts, int systemWords, String header, double share) {
        this(systemPrompts, systemWords, 0, null, header, share);
    }

    /** Validates, naming the flag of a bad value. */
    public Sessions {
        if (systemPrompts < 0 || systemPrompts > 100_000) {
            throw new InvalidSettingException("systemPrompts", "must be 0 to 100000, was " + systemPrompts);
        }
        if (systemWords < 0 || systemWords > 1_000_000) {
            throw new InvalidSettingException("systemWords", "must be 0 to 1000000, was " + systemWords);
        }
        if (systemTokens < 0 || systemTokens > MAX_SYSTEM_TOKENS) {
            throw new InvalidSettingException("systemTokens", "must be 0 to " + MAX_SYSTEM_TOKENS + ", was " + systemTokens);
        }
        if (!(share >= 0 && share <= 1)) {
            throw new InvalidSettingException("sessionShare", "must be 0 to 1, was " + share);
        }
    }

    /**
     * Returns the system prompt conversation {@code index} of a run seeded with {@code seed} opens with
     * ({@code systemSeed} in its place when set), or {@code null} when there are none.
     */
    public String system(long seed, int index) {
        if (systemPrompts == 0) {
            return null;
        }
        if (systemSeed != null) {
            seed = systemSeed;
        }
        int which = Math.floorMod(index, systemPrompts);
        String head = "You are assistant persona " + which + ". ";
        if (systemTokens == 0) {
            return head + Prompts.user(seed ^ 0x5eed, -1 - which, 0, systemWords);
        }
        int chars = systemTokens * Prompts.CHARS_PER_TOKEN;
        return (head + Prompts.ofLength(seed ^ 0x5eed, -1 - which, 0, Math.max(1, chars - head.length())))
                .substring(0, chars);
    }

    /** Returns the session header's value conversation {@code index} sends, or {@code null} when it sends none. */
    public String session(long seed, int index) {
        if (header == null) {
            return null;
        }
        double spot = (index * 0.6180339887498949) % 1.0;
        return spot < share ? "conv-" + seed + "-" + index : null;
    }

    /** Returns the headers conversation {@code index} sends with every turn. */
    public Map<String, String> headers(long seed, int index) {
        String session = session(seed, index);
        return session == null ? Map.of() : Map.of(header, session);
    }
}
