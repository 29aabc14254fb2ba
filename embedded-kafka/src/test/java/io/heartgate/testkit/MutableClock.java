package io.heartgate.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** A {@link Clock} that tests move by hand; thread-safe. Starts at 2026-11-30T16:00:00Z unless told. */
public final class MutableClock extends Clock {

    private final AtomicLong epochMillis;
    /** Moved forward after every reading by this many ms: 0 unless {@link #advanceOnEveryRead}. */
    private volatile long stepMillis;

    public MutableClock() {
        this(Instant.parse("2026-11-30T16:00:00Z"));
    }

    public MutableClock(Instant start) {
        this.epochMillis = new AtomicLong(start.toEpochMilli());
    }

    /** Moves the clock forward by {@code d}. */
    public void advance(Duration d) {
        epochMillis.addAndGet(d.toMillis());
    }

    /**
     * Moves the clock forward by {@code d} after every reading from now on: code timing itself with
     * it sees each stretch between two readings take {@code d}.
     */
    public void advanceOnEveryRead(Duration d) {
        stepMillis = d.toMillis();
    }

    /** Sets the clock to {@code t}. */
    public void set(Instant t) {
        epochMillis.set(t.toEpochMilli());
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }

    @Override
    public long millis() {
        return epochMillis.getAndAdd(stepMillis);
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis());
    }
}
