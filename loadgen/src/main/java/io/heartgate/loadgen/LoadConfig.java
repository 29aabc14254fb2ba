package io.heartgate.loadgen;

import io.heartgate.protocol.InvalidSettingException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Configures one load run. Immutable; every value is checked here, so a bad one fails before any
 * request is sent.
 *
 * @param url the base URL requests go to, {@code http} or {@code https}, such as {@code http://127.0.0.1:8080}
 * @param api the wire format
 * @param rate requests per second, positive and finite; conversations start at {@code rate / turns}
 * @param duration the window in which conversations start
 * @param arrivals how start times are spread
 * @param seed the seed of every random choice (arrival gaps, models, prompt words)
 * @param timeout the most a request may take, counted from its scheduled start; also how long the
 *     run waits after {@code duration} for answers still under way
 * @param maxInFlight requests under way at once; an arrival beyond it is dropped, not sent
 * @param mix the models and their shares
 * @param turns requests per conversation, from 1
 * @param thinkTime the pause between an answer and the conversation's next turn; zero or more
 * @param keys API keys sent as {@code Authorization: Bearer}, one per conversation round robin; empty for none
 * @param maxTokens the answer length asked for; with {@code minTokens} below it, the longest
 * @param promptWords words in each user message
 * @param label the result row's name; null or blank gives the API's name
 * @param minTokens the shortest answer asked for: each request asks for a length drawn evenly from
 *     {@code [minTokens, maxTokens]}, fixed by the seed, as real answers vary; equal for one length
 * @param sessions the shared system prompts and the session header
 * @param promptTokens the length of each user message in tokens of {@value Prompts#CHARS_PER_TOKEN}
 *     characters (exactly that many characters), or 0 for {@code promptWords} words
 */
public record LoadConfig(URI url, Api api, double rate, Duration duration, Arrivals arrivals, long seed,
                         Duration timeout, int maxInFlight, Mix mix, int turns, Duration thinkTime,
                         List<String> keys, int maxTokens, int promptWords, String label, int minTokens,
                         Sessions sessions, int promptTokens) {

    /** The most {@code promptTokens}: a million characters. */
    public static final int MAX_PROMPT_TOKENS = 250_000;

    /** A configuration whose user messages are {@code promptWords} words long. */
    public LoadConfig(URI url, Api api, double rate, Duration duration, Arrivals arrivals, long seed,
                      Duration timeout, int maxInFlight, Mix mix, int turns, Duration thinkTime,
                      List<String> keys, int maxTokens, int promptWords, String label, int minTokens,
                      Sessions sessions) {
        this(url, api, rate, duration, arrivals, seed, timeout, maxInFlight, mix, turns, thinkTime, keys, maxTokens,
                promptWords, label, minTokens, sessions, 0);
    }

    /** A configuration without system prompts or session headers. */
    public LoadConfig(URI url, Api api, double rate, Duration duration, Arrivals arrivals, long seed,
                      Duration timeout, int maxInFlight, Mix mix, int turns, Duration thinkTime,
                      List<String> keys, int maxTokens, int promptWords, String label, int minTokens) {
        this(url, api, rate, duration, arrivals, seed, timeout, maxInFlight, mix, turns, thinkTime, keys, maxTokens,
                promptWords, label, minTokens, Sessions.NONE);
    }

    /** A configuration whose answers all ask for {@code maxTokens}. */
    public LoadConfig(URI url, Api api, double rate, Duration duration, Arrivals arrivals, long seed,
                      Duration timeout, int maxInFlight, Mix mix, int turns, Duration thinkTime,
                      List<String> keys, int maxTokens, int promptWords, String label) {
        this(url, api, rate, duration, arrivals, seed, timeout, maxInFlight, mix, turns, thinkTime, keys, maxTokens,
                promptWords, label, maxTokens);
    }

    /**
     * Returns the answer length turn {@code turn} of conversation {@code conversation} asks for: drawn
     * evenly from {@code [minTokens, maxTokens]} by a hash of the seed and both numbers, so a run is
     * repeatable and every request's length independent of the others'.
     */
    public int tokensFor(int conversation, int turn) {
        if (minTokens == maxTokens) {
            return maxTokens;
        }
        long h = seed ^ 0x9E3779B97F4A7C15L * (conversation + 1) ^ 0xC2B2AE3D27D4EB4FL * (turn + 1);
        h = (h ^ (h >>> 33)) * 0xFF51AFD7ED558CCDL;
        h = (h ^ (h >>> 33)) * 0xC4CEB9FE1A85EC53L;
        h ^= h >>> 33;
        return minTokens + (int) Math.floorMod(h, (long) (maxTokens - minTokens + 1));
    }

    /**
     * Returns the user message of turn {@code turn} (from 1) of conversation {@code conversation}:
     * {@code promptTokens} tokens' worth of characters when set, else {@code promptWords} words.
     */
    public String userMessage(int conversation, int turn) {
        return promptTokens > 0
                ? Prompts.ofLength(seed, conversation, turn, promptTokens * Prompts.CHARS_PER_TOKEN)
                : Prompts.user(seed, conversation, turn, promptWords);
    }

    /** The most requests a run may plan; every one is kept in memory for the exact percentiles. */
    public static final long MAX_PLANNED = 2_000_000;

    /** Checks every value. */
    public LoadConfig {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(api, "api");
        Objects.requireNonNull(duration, "duration");
        Objects.requireNonNull(arrivals, "arrivals");
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(mix, "mix");
        Objects.requireNonNull(thinkTime, "thinkTime");
        Objects.requireNonNull(sessions, "sessions");
        keys = List.copyOf(keys);
        label = label == null || label.isBlank() ? api.name().toLowerCase(Locale.ROOT) : label.strip();
        String scheme = url.getScheme();
        if (scheme == null || !(scheme.equals("http") || scheme.equals("https")) || url.getHost() == null) {
            throw new InvalidSettingException("url", "must be an http:// or https:// URL with a host, was '" + url + "'");
        }
        if (!(rate > 0) || Double.isInfinite(rate)) {
            throw new InvalidSettingException("rate", "must be a positive number of requests per second, was " + rate);
        }
        if (duration.isNegative() || duration.isZero()) {
            throw new InvalidSettingException("duration", "must be positive, was " + duration);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new InvalidSettingException("timeout", "must be positive, was " + timeout);
        }
        if (thinkTime.isNegative()) {
            throw new InvalidSettingException("thinkTime", "must not be negative, was " + thinkTime);
        }
        if (maxInFlight < 1) {
            throw new InvalidSettingException("maxInFlight", "must be at least 1, was " + maxInFlight);
        }
        if (turns < 1 || turns > 1000) {
            throw new InvalidSettingException("turns", "must be 1 to 1000, was " + turns);
        }
        if (maxTokens < 1) {
            throw new InvalidSettingException("maxTokens", "must be at least 1, was " + maxTokens);
        }
        if (minTokens < 1 || minTokens > maxTokens) {
            throw new InvalidSettingException("minTokens", "must be 1 to --max-tokens (" + maxTokens + "), was " + minTokens);
        }
        if (promptWords < 1 || promptWords > 100_000) {
            throw new InvalidSettingException("promptWords", "must be 1 to 100000, was " + promptWords);
        }
        if (promptTokens < 0 || promptTokens > MAX_PROMPT_TOKENS) {
            throw new InvalidSettingException("promptTokens", "must be 0 to " + MAX_PROMPT_TOKENS + ", was " + promptTokens);
        }
        for (String key : keys) {
            if (key.isEmpty() || key.chars().anyMatch(c -> Character.isWhitespace(c) || Character.isISOControl(c))) {
                throw new InvalidSettingException("keys", "a key must be non-empty without spaces or control characters");
            }
        }
        double planned = rate * (duration.toNanos() / 1e9);
        if (planned > MAX_PLANNED) {
            throw new InvalidSettingException("rate", "times --duration plans about " + (long) planned
                    + " requests; at most " + MAX_PLANNED + " fit one run");
        }
    }

    /** Returns the rate at which conversations start: {@code rate / turns}. */
    public double conversationRate() {
        return rate / turns;
    }
}
