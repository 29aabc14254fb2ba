package io.heartgate.scheduler.admission;

/**
 * A token bucket of {@code perMinute} tokens: full at first, refilled continuously at
 * {@code perMinute} a minute, so a caller may burst one minute's allowance and then goes at the
 * steady rate. A request takes one token before it is sent ({@link #tryTake}); tokens a response used
 * are taken after the fact ({@link #charge}) and may leave the bucket in debt, which then refuses
 * until the refill pays it off. Plain values and the caller's clock (nanoseconds); not thread-safe
 * (the {@link RateLimits} of its key guards it).
 */
public final class TokenBucket {

    private static final long MINUTE_NANOS = 60_000_000_000L;
    /**
     * The deepest debt, in minutes of refill: a day. A node that reports an absurd count (a bug, or a
     * forged answer) then locks its key out for a day at most, and every wait stays a number that
     * {@code Retry-After} and the reset headers can write.
     */
    static final long MAX_DEBT_MINUTES = 1440;

    private final long perMinute;
    private double tokens;
    private long lastNanos;

    /** Creates a full bucket of {@code perMinute} (at least 1) at {@code nowNanos}. */
    public TokenBucket(long perMinute, long nowNanos) {
        if (perMinute < 1) {
            throw new IllegalArgumentException("perMinute must be at least 1, was " + perMinute);
        }
        this.perMinute = perMinute;
        this.tokens = perMinute;
        this.lastNanos = nowNanos;
    }

    /** Returns the time the bucket was last brought up to: it refills from there. */
    long lastNanos() {
        return lastNanos;
    }

    /** Returns the bucket's size: the limit per minute. */
    public long limit() {
        return perMinute;
    }

    private void refill(long nowNanos) {
        long elapsed = nowNanos - lastNanos;
        if (elapsed > 0) {
            tokens = Math.min(perMinute, tokens + (double) elapsed * perMinute / MINUTE_NANOS);
            lastNanos = nowNanos;
        }
    }

    /** Takes {@code n} tokens if the bucket holds them at {@code nowNanos}; returns whether it did. */
    public boolean tryTake(long n, long nowNanos) {
        refill(nowNanos);
        if (tokens >= n) {
            tokens -= n;
            return true;
        }
        return false;
    }

    /** Says whether the bucket holds at least one whole token (it is not in debt). */
    public boolean hasAny(long nowNanos) {
        refill(nowNanos);
        return tokens >= 1;
    }

    /** Takes {@code n} tokens used already, going into debt if need be (a day's refill at most). */
    public void charge(long n, long nowNanos) {
        refill(nowNanos);
        tokens = Math.max(tokens - n, -(double) MAX_DEBT_MINUTES * perMinute);
    }

    /** Puts back {@code n} tokens taken for a request that was then refused; never above the limit. */
    public void giveBack(long n, long nowNanos) {
        refill(nowNanos);
        tokens = Math.min(perMinute, tokens + n);
    }

    /**
     * Returns a bucket of {@code perMinute} for a key whose limit changed at {@code nowNanos}: it holds
     * what this one holds, never more than its new size, and refills at the new rate. A debt stays (up
     * to a day of the new refill): editing the keys file never hands a key a fresh minute nor forgives
     * what it used, and resizing back and forth (a request that looked up the old limit just before a
     * reload) gains nothing.
     */
    public TokenBucket resized(long perMinute, long nowNanos) {
        refill(nowNanos);
        TokenBucket b = new TokenBucket(perMinute, nowNanos);
        b.tokens = Math.max(Math.min(tokens, perMinute), -(double) MAX_DEBT_MINUTES * perMinute);
        return b;
    }

    /** Returns the whole tokens left, never below zero. */
    public long remaining(long nowNanos) {
        refill(nowNanos);
        return Math.max(0, (long) Math.floor(tokens));
    }

    /** Returns how long until the bucket holds {@code n} tokens (0 if it does now), in nanoseconds. */
    public long nanosUntil(long n, long nowNanos) {
        refill(nowNanos);
        double missing = Math.min(n, perMinute) - tokens;
        return missing <= 0 ? 0 : (long) Math.ceil(missing * MINUTE_NANOS / perMinute);
    }

    /** Returns how long until the bucket is full again, in nanoseconds: OpenAI's {@code x-ratelimit-reset-*}. */
    public long nanosUntilFull(long nowNanos) {
        return nanosUntil(perMinute, nowNanos);
    }
}
