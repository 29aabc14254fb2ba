package io.heartgate.loadgen;

import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Computes a run's arrival times before it starts, so that when requests are sent never depends on
 * how fast earlier ones were answered (an open loop). Pure and thread-safe.
 */
public final class Schedule {

    private Schedule() {
    }

    /**
     * Returns the arrival offsets from the run's start, in nanoseconds, ascending, every one below
     * {@code duration}.
     *
     * <p>{@link Arrivals#UNIFORM}: {@code 0, 1/rate, 2/rate, ...} (rate 4 over 1 s gives 0, 250, 500,
     * 750 ms). {@link Arrivals#POISSON}: the first arrival after one exponential gap, each next one
     * after another, gaps drawn from a generator seeded with {@code seed}; the same arguments always
     * give the same times.
     *
     * @param rate arrivals per second, positive and finite
     * @param duration the window; arrivals at or after it are not part of the run
     */
    public static long[] arrivals(Arrivals kind, double rate, Duration duration, long seed) {
        if (!(rate > 0) || Double.isInfinite(rate)) {
            throw new IllegalArgumentException("rate must be positive, was " + rate);
        }
        long window = duration.toNanos();
        double gapNanos = 1e9 / rate;
        int expected = (int) Math.min(Integer.MAX_VALUE - 8, Math.ceil(window / gapNanos) + 16);
        long[] out = new long[Math.max(16, expected)];
        int n = 0;
        if (kind == Arrivals.UNIFORM) {
            for (long i = 0; ; i++) {
                long t = Math.round(i * gapNanos);
                if (t >= window) {
                    break;
                }
                out = ensure(out, n);
                out[n++] = t;
            }
        } else {
            SplittableRandom random = new SplittableRandom(seed);
            double t = 0;
            while (true) {
                // 1 - u lies in (0, 1], so the logarithm is finite.
                t += -Math.log(1 - random.nextDouble()) * gapNanos;
                if (t >= window) {
                    break;
                }
                out = ensure(out, n);
                out[n++] = (long) t;
            }
        }
        return Arrays.copyOf(out, n);
    }

    private static long[] ensure(long[] a, int n) {
        return n < a.length ? a : Arrays.copyOf(a, a.length * 2);
    }
}
