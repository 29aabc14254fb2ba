package io.heartgate.scheduler.admission;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The gateway queue's {@code Retry-After}: a running mean of the waits of the requests that left
 * the queue lately, served or timed out (weight 1/8 to the newest). Counting the timed-out ones
 * keeps a queue where nothing is served any more from telling everyone to come back in a second.
 * Written by one thread at a time (the queue's lock); read by any.
 */
final class RecentWait {

    private final long limitSeconds;
    private volatile double meanNanos;

    /** @param limit the queue's wait limit, the longest a client is told to wait */
    RecentWait(Duration limit) {
        this.limitSeconds = Math.max(1, limit.toSeconds());
    }

    /** Adds the wait of a request that left the queue. */
    void note(long waitedNanos) {
        meanNanos += (waitedNanos - meanNanos) / 8;
    }

    /** Returns the mean wait in seconds, rounded up, at least 1 and at most the wait limit. */
    int retryAfterSeconds() {
        long mean = (long) Math.ceil(meanNanos / TimeUnit.SECONDS.toNanos(1));
        return (int) Math.max(1, Math.min(limitSeconds, mean));
    }
}
