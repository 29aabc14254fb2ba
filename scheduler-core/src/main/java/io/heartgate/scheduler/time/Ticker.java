package io.heartgate.scheduler.time;

import java.time.Clock;
import java.util.function.LongSupplier;

/**
 * The scheduler's one monotonic time source: what waits, timeouts, rate limits and latencies are
 * measured on, in nanoseconds, never the wall clock (the table and health use an injected
 * {@link Clock} for instants). Injected everywhere time matters, so tests move it by hand.
 * An abstract class, not a functional interface, on purpose: a supplier of milliseconds cannot pass
 * for a ticker unnoticed. An event loop's coarse clock (read once per sweep, free per chunk) is a
 * ticker too, whose {@link #millis} is the cached reading.
 */
public abstract class Ticker {

    /** The JVM's {@link System#nanoTime()}. */
    public static final Ticker SYSTEM = ofNanos(System::nanoTime);

    /** Returns the time now, in nanoseconds from an arbitrary origin. */
    public abstract long nanos();

    /** Returns the time now, in milliseconds from the same origin. */
    public long millis() {
        return nanos() / 1_000_000;
    }

    /** Returns the ticker that reads {@code nanos}. */
    public static Ticker ofNanos(LongSupplier nanos) {
        return new Ticker() {
            @Override
            public long nanos() {
                return nanos.getAsLong();
            }
        };
    }

    /** Returns the ticker that reads {@code millis}, a clock of millisecond resolution. */
    public static Ticker ofMillis(LongSupplier millis) {
        return new Ticker() {
            @Override
            public long nanos() {
                return millis.getAsLong() * 1_000_000;
            }

            @Override
            public long millis() {
                return millis.getAsLong();
            }
        };
    }
}
