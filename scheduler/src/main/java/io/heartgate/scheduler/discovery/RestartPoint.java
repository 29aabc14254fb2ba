package io.heartgate.scheduler.discovery;

import java.time.Duration;
import java.time.Instant;

/**
 * What a replica with a complete node table last said about it: its table held every heartbeat
 * written before {@code at}, and the longest interval among the nodes it listed. A replica starting
 * needs no more of the heartbeat topic than that bounds, which at scale is seconds of it rather than
 * the whole look-back: every node it listed that is still alive has a heartbeat within its own
 * expiry of now, and every node it did not list has all its heartbeats after {@code at}. So a
 * restart reads from the earlier of {@code at} (less {@link #CLOCK_MARGIN}, for the replicas'
 * clocks) and "now less the longest expiry", never further back than the look-back; the table's
 * rule that a record older than its node's expiry revives nothing still applies to what is read.
 *
 * @param replica the replica that said it ({@code ""} for this one's own)
 * @param at up to when its table held the topic (its clock)
 * @param longestNodeIntervalMs the longest interval among the nodes it listed; 0 when none
 */
public record RestartPoint(String replica, Instant at, long longestNodeIntervalMs) {

    /** How far apart the clocks of two replicas may be: one second, well over what NTP keeps. */
    public static final Duration CLOCK_MARGIN = Duration.ofSeconds(1);

    /**
     * Returns where a replica started at {@code now}, judging nodes by {@code missedHeartbeats}
     * intervals, reads the heartbeat topic from: never before {@code now - lookBack}.
     */
    public Instant readFrom(Instant now, Duration lookBack, int missedHeartbeats) {
        Instant longestExpiry = now.minusMillis(Math.multiplyExact(longestNodeIntervalMs, (long) missedHeartbeats));
        Instant said = at.minus(CLOCK_MARGIN);
        Instant from = said.isBefore(longestExpiry) ? said : longestExpiry;
        Instant limit = now.minus(lookBack);
        return from.isBefore(limit) ? limit : from;
    }
}
