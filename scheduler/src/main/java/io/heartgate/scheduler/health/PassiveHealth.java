package io.heartgate.scheduler.health;

import io.heartgate.scheduler.status.Ejection;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.TableSnapshot;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ejects nodes this scheduler cannot connect to, even while their heartbeats say {@code UP}: the agent
 * sees its server, but the scheduler may not (wrong advertised URL, a firewall, a dead host whose
 * last heartbeat is still fresh). After {@code failuresToEject} consecutive connect failures a node
 * is ejected for a back-off that doubles with each ejection in a row (up to {@code maxEjection});
 * when it runs out the node gets requests again, and one success clears its record.
 *
 * <p>Only connect failures count, and the proxy's stall rule ({@link #stalled}). A client hanging
 * up, a timeout, or a node's own overload answer (503, 429) is never the node's death. Thread-safe; time comes from the injected clock.
 *
 * <p>Replicas share what they see: each ejection and readmission made here is told to a
 * {@link Listener}, and those another replica made are {@linkplain #adopt adopted} and
 * {@linkplain #readmit readmitted} here without being told back. The rule for conflicting evidence
 * is the topic's order: the last ejection or readmission of a node that a replica reads stands,
 * and every replica reads a node's events in the same order, so they agree.
 */
public final class PassiveHealth implements EjectionView, Consumer<TableSnapshot> {

    private static final Logger log = LoggerFactory.getLogger(PassiveHealth.class);

    private static final class Record {
        int consecutiveFailures;
        int ejectionsInARow;
        Ejection ejection;
        /** Ejected by this replica's own evidence (not only adopted): only then does a success here readmit it for all. */
        boolean ejectedHere;
        /** Holds an ejection another replica made: kept through its end even before the node is listed here. */
        boolean adopted;
    }

    private final Clock clock;
    private final int failuresToEject;
    private final Duration baseEjection;
    private final Duration maxEjection;
    private final Map<String, Record> records = new ConcurrentHashMap<>();
    private volatile int ejectedCount;
    private final LongAdder ejections = new LongAdder();
    private final LongAdder stalls = new LongAdder();
    private volatile Listener listener = Listener.NONE;

    /** Told of the ejections and readmissions this replica makes, for the others. */
    public interface Listener {
        /** Nobody listens: a replica on its own. */
        Listener NONE = new Listener() {
            @Override
            public void ejected(String nodeId, Ejection ejection) {
            }

            @Override
            public void readmitted(String nodeId) {
            }
        };

        /** Says that {@code nodeId} is ejected until {@code ejection.until()}. */
        void ejected(String nodeId, Ejection ejection);

        /** Says that {@code nodeId}, ejected before, answered again. */
        void readmitted(String nodeId);
    }

    /** Creates the tracker. */
    public PassiveHealth(Clock clock, int failuresToEject, Duration baseEjection, Duration maxEjection) {
        if (failuresToEject < 1) {
            throw new IllegalArgumentException("failuresToEject must be at least 1");
        }
        this.clock = clock;
        this.failuresToEject = failuresToEject;
        this.baseEjection = baseEjection;
        this.maxEjection = maxEjection;
    }

    /** Sets who is told of ejections and readmissions; set once, when the replica is wired. */
    public void share(Listener to) {
        this.listener = to;
    }

    /**
     * Runs {@code action} on {@code nodeId}'s record (made if missing) under its lock; again on a new
     * one when a success or readmission removed it meanwhile, so nothing is written to a record no
     * longer in the map.
     */
    private <T> T locked(String nodeId, Function<Record, T> action) {
        while (true) {
            Record r = records.computeIfAbsent(nodeId, id -> new Record());
            synchronized (r) {
                if (records.get(nodeId) == r) {
                    return action.apply(r);
                }
            }
        }
    }

    /**
     * Takes an ejection read from the gateway events topic, made by replica {@code by} (this one's
     * own, read back, too): {@code nodeId} is held out for {@code remaining} (at most the longest
     * ejection), as if ejected here; a later ejection here backs off from it. Ignored when nothing remains.
     */
    public void adopt(String nodeId, Duration remaining, int failures, String reason, String by) {
        if (remaining.isNegative() || remaining.isZero()) {
            return;
        }
        Duration held = remaining.compareTo(maxEjection) > 0 ? maxEjection : remaining;
        Instant until = clock.instant().plus(held);
        locked(nodeId, r -> {
            r.ejection = new Ejection(until, failures, reason);
            r.ejectionsInARow = Math.max(r.ejectionsInARow, 1);
            r.consecutiveFailures = 0;
            r.adopted = true;
            return null;
        });
        recount();
        log.info("Node {} ejected until {} as replica {} saw: {}", nodeId, until, by, reason);
    }

    /** Takes a readmission read from the gateway events topic: {@code nodeId}'s record here is forgotten, as on a success here. */
    public void readmit(String nodeId, String by) {
        Record r = records.get(nodeId);
        if (r == null) {
            return;
        }
        synchronized (r) {
            records.remove(nodeId, r);
        }
        recount();
        log.info("Node {} back in rotation: replica {} had an answer from it", nodeId, by);
    }

    /** Records a failed connect to {@code nodeId}; returns whether this failure ejected it. */
    public boolean connectFailed(String nodeId, String url, String reason) {
        return locked(nodeId, r -> {
            r.consecutiveFailures++;
            Instant now = clock.instant();
            boolean ejectedNow = r.ejection != null && now.isBefore(r.ejection.until());
            if (ejectedNow || r.consecutiveFailures < failuresToEject) {
                return false;
            }
            Duration backoff = eject(r, now, r.consecutiveFailures, reason);
            log.warn("Node {} ejected for {} ms after {} consecutive connect failures to {} ({}); its heartbeats "
                    + "still say it is up", nodeId, backoff.toMillis(), r.consecutiveFailures, url, reason);
            listener.ejected(nodeId, r.ejection);
            return true;
        });
    }

    /**
     * Ejects {@code nodeId} as stalled (the proxy's stall rule: it answered nothing for the stall
     * timeout while requests waited on it and other nodes answered), with the same doubling
     * back-off as connect failures; returns {@code false} when it is ejected already.
     */
    public boolean stalled(String nodeId, String reason) {
        return locked(nodeId, r -> {
            Instant now = clock.instant();
            if (r.ejection != null && now.isBefore(r.ejection.until())) {
                return false;
            }
            Duration backoff = eject(r, now, 0, "stalled: " + reason);
            stalls.increment();
            log.warn("Node {} ejected for {} ms as stalled: {}; its heartbeats still say it is up", nodeId,
                    backoff.toMillis(), reason);
            listener.ejected(nodeId, r.ejection);
            return true;
        });
    }

    private Duration eject(Record r, Instant now, int failures, String reason) {
        Duration backoff = baseEjection.multipliedBy(1L << Math.min(r.ejectionsInARow, 16));
        if (backoff.compareTo(maxEjection) > 0) {
            backoff = maxEjection;
        }
        r.ejectionsInARow++;
        r.ejectedHere = true;
        r.ejection = new Ejection(now.plus(backoff), failures, reason);
        ejections.increment();
        recount();
        return backoff;
    }

    /**
     * Forgets the nodes that left the table (expired, or a tombstone): one that comes back is a new
     * process and starts with a clean record, not the rest of its predecessor's ejection. An
     * ejection another replica made stays to its end even for a node not listed here (yet: a
     * replica starting reads the events topic while discovery still fills its table). Fed the
     * table's snapshots as a listener.
     */
    @Override
    public void accept(TableSnapshot snapshot) {
        if (records.isEmpty()) {
            return;
        }
        Instant now = clock.instant();
        if (records.entrySet().removeIf(e -> snapshot.node(e.getKey()) == null && !(e.getValue().adopted
                && e.getValue().ejection != null && now.isBefore(e.getValue().ejection.until())))) {
            recount();
        }
    }

    /** Records a successful exchange with {@code nodeId}: its failures are forgotten. */
    public void succeeded(String nodeId) {
        if (records.isEmpty()) {
            return; // no node has a failure on record: nothing to forget, no lookup per response
        }
        Record r = records.get(nodeId);
        if (r == null) {
            return;
        }
        boolean ejectedHere;
        synchronized (r) {
            ejectedHere = r.ejectedHere;
            if (r.ejectionsInARow > 0) {
                log.info("Node {} answers again; back in rotation", nodeId);
            }
            records.remove(nodeId, r);
        }
        recount();
        if (ejectedHere) {
            listener.readmitted(nodeId);
        }
    }

    @Override
    public boolean isEjected(String nodeId) {
        if (ejectedCount == 0) {
            return false;
        }
        Record r = records.get(nodeId);
        if (r == null) {
            return false;
        }
        Ejection e = r.ejection;
        return e != null && clock.instant().isBefore(e.until());
    }

    @Override
    public Optional<Ejection> ejection(String nodeId) {
        Record r = records.get(nodeId);
        if (r == null) {
            return Optional.empty();
        }
        Ejection e = r.ejection;
        return e != null && clock.instant().isBefore(e.until()) ? Optional.of(e) : Optional.empty();
    }

    /** Returns how many ejections happened so far. */
    public long ejectionCount() {
        return ejections.sum();
    }

    /** Returns how many of those ejections were of stalled nodes. */
    public long stallCount() {
        return stalls.sum();
    }

    /** Returns how many nodes are ejected now. */
    public long ejectedNow() {
        return records.keySet().stream().filter(this::isEjected).count();
    }

    @Override
    public boolean anyEjected() {
        return ejectedCount > 0;
    }

    private synchronized void recount() {
        int n = 0;
        for (Record r : records.values()) {
            if (r.ejection != null) {
                n++;
            }
        }
        ejectedCount = n;
    }
}
