package io.heartgate.scheduler.admission;

import io.heartgate.scheduler.time.Ticker;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Enforces each API key's {@code rpm=} and {@code tpm=} on this scheduler replica with one
 * {@link TokenBucket} per limit: it takes a request token before a request goes on, refuses while a
 * key's token bucket is in debt, charges the tokens an answer used and gives a request token back
 * ({@link #giveBack}) when told to. Keys without limits cost one field read. Limits are per replica:
 * with N replicas behind a load balancer a key gets up to N times its limits. Thread-safe: one lock
 * per key.
 */
public final class RateLimits {

    /** The outcome for one request: on, or refused with when to retry; the headers go on every answer. */
    public record Verdict(boolean allowed, String limit, int retryAfterSeconds, Map<String, String> headers) {
        /** A key without limits: on, no headers. */
        public static final Verdict UNLIMITED = new Verdict(true, null, 0, Map.of());
    }

    private final Ticker ticker;
    private final Map<String, State> byKey = new ConcurrentHashMap<>();

    /** @param ticker the monotonic clock buckets refill on */
    public RateLimits(Ticker ticker) {
        this.ticker = ticker;
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
        State s = byKey.get(key.name());
        if (s != null && s.rpm == key.rpm() && s.tpm == key.tpm()) {
            return s;
        }
        // New: full. The keys file changed its limits: the same levels under the new ones (no more
        // than the new size), so an operator lowering an abusive key's limit does not hand it a fresh
        // minute or forgive its debt; nor does a request that looked the old line up just before the
        // reload, which resizes the buckets back and forth at no gain.
        return byKey.compute(key.name(), (n, old) -> {
            if (old == null) {
                return new State(key.rpm(), key.tpm(), now);
            }
            if (old.rpm == key.rpm() && old.tpm == key.tpm()) {
                return old;
            }
            synchronized (old) {
                return new State(old, key.rpm(), key.tpm(), now);
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
