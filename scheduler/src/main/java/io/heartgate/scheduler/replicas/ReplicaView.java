package io.heartgate.scheduler.replicas;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The replicas this one knows to be alive, from their heartbeats on the events topic (its own
 * included, as it reads it back), and whether the topic can be reached: a replica is listed until
 * three of its intervals pass without a heartbeat, or it says it leaves. While Kafka cannot be
 * reached (nothing read, or this replica's reports not stored, for {@code unreachableAfterMs}),
 * limits are split among the replicas last seen alive ({@link #shares}). Thread-safe.
 */
public final class ReplicaView {

    /** One live replica as last heard. */
    public record Replica(String id, String version, String address, int queueDepth, long intervalMs,
                          Instant heardAt, boolean self) {
    }

    private final String self;
    private final Clock clock;
    private final long unreachableAfterMs;
    /** The longest a starting replica waits to read the topic before it reports ready anyway. */
    static final long CATCH_UP_LIMIT_MS = 30_000;
    /** The most replicas listed: more heartbeats of new ids are no gateway's, and are not listed. */
    static final int MAX_REPLICAS = 1_000;

    private final Map<String, Replica> replicas = new ConcurrentHashMap<>();
    private volatile Instant contact = Instant.MIN;
    /** Since when this replica's reports have failed to be stored; {@code null} while they are stored. */
    private volatile Instant failingSince;
    private volatile int lastSeen = 1;
    private volatile boolean degraded;
    private volatile boolean caughtUp;
    private final Instant startedAt;

    /**
     * @param self this replica's id
     * @param unreachableAfterMs how long without contact with the topic before limits fall back to a share
     */
    ReplicaView(String self, Clock clock, long unreachableAfterMs) {
        this.self = self;
        this.clock = clock;
        this.unreachableAfterMs = unreachableAfterMs;
        this.startedAt = clock.instant();
    }

    /** Notes a replica's heartbeat; a new id past {@link #MAX_REPLICAS} listed is ignored. */
    void heard(GatewayEvent.ReplicaBeat b) {
        if (replicas.size() >= MAX_REPLICAS && !replicas.containsKey(b.replica())) {
            return;
        }
        replicas.put(b.replica(), new Replica(b.replica(), b.version(), b.address(), b.queueDepth(), b.intervalMs(),
                clock.instant(), b.replica().equals(self)));
    }

    /** Notes that a replica left. */
    void left(String replica) {
        replicas.remove(replica);
    }

    /** Notes that the topic answered just now (a poll, an offsets request). */
    void contact() {
        contact = clock.instant();
    }

    /** Notes that the reader has read what the topic held when it started: the buckets and homes are rebuilt. */
    void caughtUp() {
        caughtUp = true;
    }

    /**
     * Says whether the topic's records at start have been read, or {@link #CATCH_UP_LIMIT_MS} passed
     * without the topic answering: until then the replica is not ready. A topic that cannot be used
     * (an ACL missing in a rolling upgrade) must not keep every replica out of service.
     */
    public boolean isCaughtUp() {
        return caughtUp || !clock.instant().isBefore(startedAt.plusMillis(CATCH_UP_LIMIT_MS));
    }

    /** Notes whether the last report this replica sent was stored. */
    void published(boolean ok) {
        if (ok) {
            failingSince = null;
        } else if (failingSince == null) {
            failingSince = clock.instant();
        }
    }

    /**
     * Drops replicas silent for three of their intervals, and decides whether limits are shared
     * or split; run often (the reader does, every poll).
     */
    void refresh() {
        Instant now = clock.instant();
        Instant failing = failingSince;
        boolean reachable = contact.plusMillis(unreachableAfterMs).isAfter(now)
                && (failing == null || failing.plusMillis(unreachableAfterMs).isAfter(now));
        if (reachable) {
            // Silent for three intervals of the topic being read: an outage beginning is no replica's death.
            Instant read = contact;
            replicas.values().removeIf(r -> !r.self && r.heardAt.plusMillis(3 * r.intervalMs).isBefore(read));
            lastSeen = Math.max(1, replicas.size());
        }
        degraded = !reachable;
    }

    /** Returns the live replicas, this one first, then by id. */
    public List<Replica> replicas() {
        List<Replica> list = new ArrayList<>(replicas.values());
        list.sort(Comparator.comparing((Replica r) -> !r.self).thenComparing(Replica::id));
        return list;
    }

    /** Returns this replica's id. */
    public String self() {
        return self;
    }

    /** Says whether the topic cannot be reached now: limits are then this replica's share. */
    public boolean degraded() {
        return degraded;
    }

    /** Returns among how many replicas each limit is split: 1 while they share their use, else those last seen. */
    public int shares() {
        return degraded ? lastSeen : 1;
    }

    /** Returns when the topic last answered, or {@link Instant#MIN} before it ever did. */
    public Instant lastContact() {
        return contact;
    }
}
