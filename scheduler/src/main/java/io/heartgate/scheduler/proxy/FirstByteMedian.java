package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.time.Ticker;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.LongAdder;

/**
 * The median time to first byte over all nodes in the last half minute: the dashboard's chart.
 * A request adds one count to a log-scale bucket, four per power of two, so recording costs a
 * bucket index and one {@link LongAdder} increment on the event loop. The reader, once a second at
 * most, keeps a snapshot of the counts and takes the median of what was added since the newest
 * snapshot at least 30 s old (the oldest kept while there is none; all counts at the first read),
 * interpolated within its bucket: within 12.5% of the exact median, enough for a chart.
 * Recording is thread-safe and lock-free; reading is synchronized and happens off the request path.
 */
final class FirstByteMedian {

    /** Four buckets per power of two. */
    private static final int SUB_BITS = 2;
    /** Times under 2^10 ns (about 1 us) share the first bucket. */
    private static final int MIN_OCTAVE = 10;
    /** Times over 2^43 ns (about 2.4 h) share the last. */
    private static final int MAX_OCTAVE = 42;
    static final int BUCKETS = (MAX_OCTAVE - MIN_OCTAVE + 1) << SUB_BITS;
    private static final long SECOND = 1_000_000_000L;
    /** How far back the median looks. */
    static final int WINDOW_SECONDS = 30;

    private final LongAdder[] counts = new LongAdder[BUCKETS];
    private final Ticker ticker;
    /** Snapshots of the counts, oldest first, each with the second it was taken in; guarded by this. */
    private final ArrayDeque<Snapshot> snapshots = new ArrayDeque<>();
    private double lastMedianMs = Double.NaN;

    private record Snapshot(long second, long[] counts) {
    }

    /** @param ticker the scheduler's monotonic time, which the window moves on */
    FirstByteMedian(Ticker ticker) {
        this.ticker = ticker;
        for (int i = 0; i < BUCKETS; i++) {
            counts[i] = new LongAdder();
        }
    }

    /** Records one time to first byte of {@code nanos}. */
    void record(long nanos) {
        counts[bucket(nanos)].increment();
    }

    /** Returns the bucket that holds {@code nanos}. */
    static int bucket(long nanos) {
        if (nanos <= 0) {
            return 0;
        }
        int octave = 63 - Long.numberOfLeadingZeros(nanos);
        if (octave < MIN_OCTAVE) {
            return 0;
        }
        if (octave > MAX_OCTAVE) {
            return BUCKETS - 1;
        }
        int sub = (int) (nanos >>> (octave - SUB_BITS)) & ((1 << SUB_BITS) - 1);
        return ((octave - MIN_OCTAVE) << SUB_BITS) | sub;
    }

    /** Returns the smallest time, in nanoseconds, that falls in {@code bucket}. */
    static long lowerBound(int bucket) {
        int octave = (bucket >>> SUB_BITS) + MIN_OCTAVE;
        int sub = bucket & ((1 << SUB_BITS) - 1);
        return (long) ((1 << SUB_BITS) | sub) << (octave - SUB_BITS);
    }

    /** Returns the median over the last {@value #WINDOW_SECONDS} s in milliseconds, or NaN without requests. */
    synchronized double medianMs() {
        long second = Math.floorDiv(ticker.nanos(), SECOND);
        Snapshot latest = snapshots.peekLast();
        if (latest != null && latest.second() == second) {
            return lastMedianMs;
        }
        long[] now = new long[BUCKETS];
        for (int i = 0; i < BUCKETS; i++) {
            now[i] = counts[i].sum();
        }
        snapshots.addLast(new Snapshot(second, now));
        // Keep the newest snapshot at least a window old as the base, drop the ones before it.
        while (snapshots.size() > 2) {
            var it = snapshots.iterator();
            it.next();
            if (it.next().second() > second - WINDOW_SECONDS) {
                break;
            }
            snapshots.removeFirst();
        }
        Snapshot base = snapshots.peekFirst();
        long[] since = new long[BUCKETS];
        long total = 0;
        for (int i = 0; i < BUCKETS; i++) {
            since[i] = base.counts() == now ? now[i] : now[i] - base.counts()[i];
            total += since[i];
        }
        lastMedianMs = total == 0 ? Double.NaN : median(since, total) / 1e6;
        return lastMedianMs;
    }

    /** The median of {@code total} counts in {@code buckets}, interpolated within its bucket, in ns. */
    private static double median(long[] buckets, long total) {
        double rank = total / 2.0;
        long before = 0;
        for (int i = 0; i < BUCKETS; i++) {
            long c = buckets[i];
            if (c > 0 && before + c >= rank) {
                double lo = i == 0 ? 0 : lowerBound(i);
                double hi = i == BUCKETS - 1 ? lo * 1.25 : lowerBound(i + 1);
                return lo + (hi - lo) * ((rank - before) / c);
            }
            before += c;
        }
        return lowerBound(BUCKETS - 1);
    }
}
