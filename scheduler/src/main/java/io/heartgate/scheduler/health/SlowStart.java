package io.heartgate.scheduler.health;

import io.heartgate.scheduler.status.Ramp;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * Tracks which nodes ramp up under slow start ({@code --slow-start}) and tells routing what share of
 * new requests each gets now: a node that joins, or becomes routable again (DOWN or DRAINING to UP),
 * gets a share of new requests that grows linearly from {@value #FIRST_SHARE} to its full
 * share over the slow-start period. Only a node heard from just now ramps: at the scheduler's start
 * the look-back replays old heartbeats of nodes that have long been serving, and those get their
 * full share at once. Fed the table's snapshots as a listener (the discovery thread); read by
 * routing on any thread. Time comes from the injected clock.
 */
public final class SlowStart implements Ramp, Consumer<TableSnapshot> {

    /** The share a node gets the moment it joins. */
    static final double FIRST_SHARE = 0.1;

    private final Clock clock;
    private final long periodMs;
    private final Map<String, Long> since = new ConcurrentHashMap<>();
    private volatile long lastEndMs;
    private Set<String> routableBefore = Set.of();

    /** Creates the ramp over {@code period} (positive). */
    public SlowStart(Clock clock, Duration period) {
        if (period.isZero() || period.isNegative()) {
            throw new IllegalArgumentException("period must be positive");
        }
        this.clock = clock;
        this.periodMs = period.toMillis();
    }

    @Override
    public void accept(TableSnapshot snapshot) {
        Instant now = clock.instant();
        long nowMs = now.toEpochMilli();
        Set<String> routable = new HashSet<>();
        for (Node n : snapshot.routable()) {
            routable.add(n.id());
            boolean fresh = Duration.between(n.lastSeen(), now).toMillis()
                    <= Math.max(2_000L, 2L * n.heartbeat().intervalMs());
            if (!routableBefore.contains(n.id()) && fresh) {
                since.put(n.id(), nowMs);
                lastEndMs = Math.max(lastEndMs, nowMs + periodMs);
            }
        }
        routableBefore = routable;
        since.entrySet().removeIf(e -> e.getValue() + periodMs <= nowMs || !routable.contains(e.getKey()));
    }

    @Override
    public boolean any() {
        return lastEndMs != 0 && clock.millis() < lastEndMs && !since.isEmpty();
    }

    @Override
    public double share(String nodeId) {
        Long start = since.get(nodeId);
        if (start == null) {
            return 1.0;
        }
        double elapsed = (clock.millis() - start) / (double) periodMs;
        return elapsed >= 1 ? 1.0 : FIRST_SHARE + (1 - FIRST_SHARE) * Math.max(0, elapsed);
    }
}
