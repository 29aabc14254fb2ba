package io.heartgate.scheduler.admission;

import io.heartgate.scheduler.time.Ticker;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.IntSupplier;

/**
 * Enforces each API key's {@code rpm=} and {@code tpm=} on this scheduler replica with one
 * {@link TokenBucket} per limit: it takes a request token before a request goes on, refuses while a
 * key's token bucket is in debt, charges the tokens an answer used and gives a request token back
 * ({@link #giveBack}) when told to. Keys without limits cost one field read.
 *
 * <p>Several replicas share a key's limits: each reports what it grants and charges to a
 * {@link SharedUsage}, and is {@linkplain #debit debited} with what the others report, so every
 * replica's buckets hold the whole gateway's use, late by the time a report takes to travel. While
 * the reports cannot travel, {@code shares} says among how many replicas a limit is split: each
 * then holds a key to its share ({@code limit / shares}, at least 1), never the whole limit.
 * Thread-safe: one lock per key.
 */
public final class RateLimits {

    /** The outcome for one request: on, or refused with when to retry; the headers go on every answer. */
    public record Verdict(boolean allowed, String limit, int retryAfterSeconds, Map<String, String> headers) {
        /** A key without limits: on, no headers. */
        public static final Verdict UNLIMITED = new Verdict(true, null, 0, Map.of());
    }

    private final Ticker ticker;
    private final SharedUsage shared;
    private final IntSupplier shares;
    private final Map<String, State> byKey = new ConcurrentHashMap<>();

    /** @param ticker the monotonic clock buckets refill on */
    public RateLimits(Ticker ticker) {
        this(ticker, SharedUsage.NONE, () -> 1);
    }

    /**
     * @param ticker the monotonic clock buckets refill on
     * @param shared where what this replica grants and charges is reported
     * @param shares among how many replicas each limit is split now: 1 while they share their use
     */
    public RateLimits(Ticker ticker, SharedUsage shared, IntSupplier shares) {
        this.ticker = ticker;
        this.shared = shared;
        this.shares = shares;
    }

    /** Returns {@code limit} split {@code shares} ways, at least 1; no limit (0) stays none. */
    static long share(long limit, int shares) {
        return limit <= 0 || shares <= 1 ? limit : Math.max(1, limit / shares);
    }

    /** One key's buckets, for the limits it had when they were made. */
    private static final class State {
        final long rpm;
        final long tpm;
        /**
         * The buckets, kept while their limit is unset (dormant): a limit unset and set again, or a
         * request that looked up the line without it just before a reload, never starts one full.
         */
        private final TokenBucket requestBucket;
        private final TokenBucket tokenBucket;

        State(long rpm, long tpm, long now) {
            this.rpm = rpm;
            this.tpm = tpm;
            this.requestBucket = rpm > 0 ? new TokenBucket(rpm, now) : null;
            this.tokenBucket = tpm > 0 ? new TokenBucket(tpm, now) : null;
        }

        /** The buckets of {@code old} (under its lock) under new limits; a limit set for the first time starts full. */
        State(State old, long rpm, long tpm, long now) {
            this.rpm = rpm;
            this.tpm = tpm;
            this.requestBucket = carried(old.requestBucket, rpm, now);
            this.tokenBucket = carried(old.tokenBucket, tpm, now);
        }

        private static TokenBucket carried(TokenBucket old, long limit, long now) {
            if (limit <= 0) {
                return old; // dormant, as it is
            }
            return old == null ? new TokenBucket(limit, now) : old.resized(limit, now);
        }

        /** Returns the latest time either bucket was brought up to. */
        long lastNanos() {
            long t = Long.MIN_VALUE;
            if (requestBucket != null) {
                t = requestBucket.lastNanos();
            }
            if (tokenBucket != null) {
                t = Math.max(t, tokenBucket.lastNanos());
            }
            return t;
        }

        /** Returns the request bucket when {@code rpm=} is set, else {@code null}. */
        TokenBucket requests() {
            return rpm > 0 ? requestBucket : null;
        }

        /** Returns the token bucket when {@code tpm=} is set, else {@code null}. */
        TokenBucket tokens() {
            return tpm > 0 ? tokenBucket : null;
        }
    }

    private State state(Quota key, long now) {
        int n = shares.getAsInt();
        long rpm = share(key.rpm(), n);
        long tpm = share(key.tpm(), n);
        State s = byKey.get(key.name());
        if (s != null && s.rpm == rpm && s.tpm == tpm) {
            return s;
        }
        // New: full. The keys file changed its limits: the same levels under the new ones (no more
        // than the new size), so an operator lowering an abusive key's limit does not hand it a fresh
        // minute or forgive its debt; nor does a request that looked the old line up just before the
        // reload, which resizes the buckets back and forth at no gain.
        return byKey.compute(key.name(), (name, old) -> {
            if (old == null) {
                return new State(rpm, tpm, now);
            }
            if (old.rpm == rpm && old.tpm == tpm) {
                return old;
            }
            synchronized (old) {
                return new State(old, rpm, tpm, Math.max(now, old.lastNanos()));
            }
        });
    }

    /**
     * Runs {@code action} on {@code key}'s buckets under their lock; again on the new ones when a
     * reload replaced them meanwhile, so that nothing is taken from or charged to buckets left behind.
     */
    private <R> R locked(Quota key, long now, Function<State, R> action) {
        while (true) {
            State s = state(key, now);
            synchronized (s) {
                if (byKey.get(key.name()) == s) {
                    return action.apply(s);
                }
            }
        }
    }

    /** Admits or refuses one request of {@code key}, taking one request token when admitted. */
    public Verdict admit(Quota key) {
        if (!key.limited()) {
            return Verdict.UNLIMITED;
        }
        long now = ticker.nanos();
        return locked(key, now, s -> {
            String refused = null;
            long waitNanos = 0;
            if (s.tokens() != null && !s.tokens().hasAny(now)) {
                refused = "tokens";
                waitNanos = s.tokens().nanosUntil(1, now);
            } else if (s.requests() != null && !s.requests().tryTake(1, now)) {
                refused = "requests";
                waitNanos = s.requests().nanosUntil(1, now);
            }
            int retryAfter = refused == null ? 0 : (int) Math.max(1, (waitNanos + 999_999_999L) / 1_000_000_000L);
            if (refused == null && s.requests() != null) {
                shared.used(key.name(), 1, 0);
            }
            return new Verdict(refused == null, refused, retryAfter, headers(s, now));
        });
    }

    /**
     * Gives back the request token a request of the key named {@code keyName} took, when the request
     * waited in the gateway queue and was then answered 503 {@code overloaded} with a
     * {@code Retry-After}, before any node saw it. Returns the key's headers after that, or {@code null} when the key has
     * no request limit here.
     */
    public Map<String, String> giveBack(String keyName) {
        long now = ticker.nanos();
        while (true) {
            State s = byKey.get(keyName);
            if (s == null || s.requests() == null) {
                return null;
            }
            synchronized (s) {
                if (byKey.get(keyName) == s) {
                    s.requests().giveBack(1, now);
                    shared.used(keyName, -1, 0);
                    return headers(s, now);
                }
            }
        }
    }

    /** Returns the headers of a limited {@code key} as they stand, taking nothing: for an answer refused before the limits. */
    public Map<String, String> peek(Quota key) {
        long now = ticker.nanos();
        return locked(key, now, s -> headers(s, now));
    }

    /** Charges {@code tokens} a response of {@code key} used (prompt and completion) to its tokens per minute. */
    public void charge(Quota key, long tokens) {
        if (key.tpm() <= 0 || tokens <= 0) {
            return;
        }
        long now = ticker.nanos();
        locked(key, now, s -> {
            if (s.tokens() != null) {
                s.tokens().charge(tokens, now);
                shared.used(key.name(), 0, tokens);
            }
            return null;
        });
    }

    /**
     * Debits {@code key}'s buckets with what another replica reported it granted ({@code requests},
     * negative for tokens it gave back) and charged ({@code tokens}) at {@code atNanos} on this
     * replica's ticker. Buckets made by a debit start full at its time, so the reports of the last
     * minute, read in order after a restart, leave them as they would be had this replica seen the
     * requests itself. A request debit may leave the bucket in debt, as a token charge may.
     */
    public void debit(Quota key, long requests, long tokens, long atNanos) {
        if (!key.limited() || requests == 0 && tokens <= 0) {
            return;
        }
        long at = Math.min(atNanos, ticker.nanos());
        locked(key, at, s -> {
            if (s.requests() != null && requests > 0) {
                s.requests().charge(requests, at);
            } else if (s.requests() != null && requests < 0) {
                s.requests().giveBack(-requests, at);
            }
            if (s.tokens() != null && tokens > 0) {
                s.tokens().charge(tokens, at);
            }
            return null;
        });
    }

    private static Map<String, String> headers(State s, long now) {
        Map<String, String> h = new LinkedHashMap<>(8);
        if (s.requests() != null) {
            h.put("x-ratelimit-limit-requests", Long.toString(s.requests().limit()));
            h.put("x-ratelimit-remaining-requests", Long.toString(s.requests().remaining(now)));
            h.put("x-ratelimit-reset-requests", reset(s.requests().nanosUntilFull(now)));
        }
        if (s.tokens() != null) {
            h.put("x-ratelimit-limit-tokens", Long.toString(s.tokens().limit()));
            h.put("x-ratelimit-remaining-tokens", Long.toString(s.tokens().remaining(now)));
            h.put("x-ratelimit-reset-tokens", reset(s.tokens().nanosUntilFull(now)));
        }
        return h;
    }

    /** Formats a reset time as OpenAI does: {@code 250ms}, {@code 1s}, {@code 6m0s}. */
    static String reset(long nanos) {
        long ms = (nanos + 999_999) / 1_000_000;
        if (ms < 1000) {
            return ms + "ms";
        }
        long s = (ms + 999) / 1000;
        return s < 60 ? s + "s" : s / 60 + "m" + s % 60 + "s";
    }
}
