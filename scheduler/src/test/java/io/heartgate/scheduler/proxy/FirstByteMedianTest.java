package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.heartgate.scheduler.time.Ticker;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class FirstByteMedianTest {

    private static final long MS = 1_000_000L;
    private static final long SECOND = 1_000 * MS;

    private final AtomicLong nanos = new AtomicLong(5 * SECOND);
    private final FirstByteMedian median = new FirstByteMedian(Ticker.ofNanos(nanos::get));

    @Test
    void noRequestsIsNaN() {
        assertThat(median.medianMs()).isNaN();
    }

    @Test
    void bucketsCoverEveryTimeInOrder() {
        int previous = 0;
        for (long t = 1; t < Long.MAX_VALUE / 8; t = t * 5 / 4 + 1) {
            int b = FirstByteMedian.bucket(t);
            assertThat(b).isBetween(previous, FirstByteMedian.BUCKETS - 1);
            if (b > 0 && b < FirstByteMedian.BUCKETS - 1) {
                assertThat(FirstByteMedian.lowerBound(b)).isLessThanOrEqualTo(t);
                assertThat(FirstByteMedian.lowerBound(b + 1)).isGreaterThan(t);
            }
            previous = b;
        }
        assertThat(FirstByteMedian.bucket(0)).isZero();
        assertThat(FirstByteMedian.bucket(-5)).isZero();
        assertThat(FirstByteMedian.bucket(Long.MAX_VALUE)).isEqualTo(FirstByteMedian.BUCKETS - 1);
    }

    @Test
    void medianIsWithinABucketOfTheExactOne() {
        // 1..999 ms, each once: the exact median is 500 ms.
        for (long ms = 1; ms < 1000; ms++) {
            median.record(ms * MS);
        }
        assertThat(median.medianMs()).isCloseTo(500, within(500 * 0.125));
    }

    @Test
    void aSkewedSpreadReadsItsMiddleNotItsMean() {
        for (int i = 0; i < 90; i++) {
            median.record(40 * MS);
        }
        for (int i = 0; i < 10; i++) {
            median.record(9_000 * MS);
        }
        assertThat(median.medianMs()).isCloseTo(40, within(40 * 0.125));
    }

    @Test
    void looksBackHalfAMinuteOnly() {
        for (int i = 0; i < 100; i++) {
            median.record(800 * MS);
        }
        assertThat(median.medianMs()).isCloseTo(800, within(100.0));
        // A reading every second for 31 s, with fast answers since.
        for (int s = 1; s <= FirstByteMedian.WINDOW_SECONDS + 1; s++) {
            nanos.addAndGet(SECOND);
            median.record(10 * MS);
            median.record(10 * MS);
            median.medianMs();
        }
        assertThat(median.medianMs()).isCloseTo(10, within(1.25));
    }

    @Test
    void readsTwiceInOneSecondAlike() {
        median.record(100 * MS);
        double first = median.medianMs();
        median.record(1_000 * MS);
        median.record(1_000 * MS);
        assertThat(median.medianMs()).isEqualTo(first);
        nanos.addAndGet(SECOND);
        assertThat(median.medianMs()).isGreaterThan(first);
    }

    @Test
    void aQuietHalfMinuteReadsNaNAgain() {
        median.record(100 * MS);
        assertThat(median.medianMs()).isPositive();
        for (int s = 1; s <= FirstByteMedian.WINDOW_SECONDS + 1; s++) {
            nanos.addAndGet(SECOND);
            median.medianMs();
        }
        assertThat(median.medianMs()).isNaN();
    }
}
