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
     * Takes an ejection another replica made: {@code nodeId} is held out until {@code ejection.until()},
     * as if ejected here (a later ejection here backs off from it). Ignored once that time has passed.
     */
    public void adopt(String nodeId, Ejection ejection) {
        if (!clock.instant().isBefore(ejection.until())) {
            return;
        }
        Record r = records.computeIfAbsent(nodeId, id -> new Record());
        synchronized (r) {
            r.ejection = ejection;
            r.ejectionsInARow = Math.max(r.ejectionsInARow, 1);
            r.consecutiveFailures = 0;
        }
        recount();
        log.info("Node {} ejected until {} by another replica: {}", nodeId, ejection.until(), ejection.reason());
    }

    /** Takes a readmission another replica made: {@code nodeId}'s record here is forgotten, as on a success here. */
    public void readmit(String nodeId) {
        Record r = records.remove(nodeId);
        if (r != null) {
            recount();
            log.info("Node {} back in rotation: another replica had an answer from it", nodeId);
        }
    }

    /** Records a failed connect to {@code nodeId}; returns whether this failure ejected it. */
    public boolean connectFailed(String nodeId, String url, String reason) {
        Record r = records.computeIfAbsent(nodeId, id -> new Record());
        synchronized (r) {
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
        }
    }

    /**
     * Ejects {@code nodeId} as stalled (the proxy's stall rule: it answered nothing for the stall
     * timeout while requests waited on it and other nodes answered), with the same doubling
     * back-off as connect failures; returns {@code false} when it is ejected already.
     */
    public boolean stalled(String nodeId, String reason) {
        Record r = records.computeIfAbsent(nodeId, id -> new Record());
        synchronized (r) {
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
        }
    }

    private Duration eject(Record r, Instant now, int failures, String reason) {
        Duration backoff = baseEjection.multipliedBy(1L << Math.min(r.ejectionsInARow, 16));
        if (backoff.compareTo(maxEjection) > 0) {
            backoff = maxEjection;
        }
        r.ejectionsInARow++;
        r.ejection = new Ejection(now.plus(backoff), failures, reason);
        ejections.increment();
        recount();
        return backoff;
    }

    /**
     * Forgets the nodes that left the table (expired, or a tombstone): one that comes back is a new
     * process and starts with a clean record, not the rest of its predecessor's ejection. Fed the
     * table's snapshots as a listener.
     */
    @Override
    public void accept(TableSnapshot snapshot) {
        if (records.isEmpty()) {
            return;
        }
        if (records.keySet().removeIf(id -> snapshot.node(id) == null)) {
            recount();
        }
    }

    /** Records a successful exchange with {@code nodeId}: its failures are forgotten. */
    public void succeeded(String nodeId) {
        Record r = records.get(nodeId);
        if (r == null) {
            return;
        }
        boolean wasEjected;
        synchronized (r) {
            wasEjected = r.ejectionsInARow > 0;
            if (wasEjected) {
                log.info("Node {} answers again; back in rotation", nodeId);
            }
            records.remove(nodeId);
        }
        recount();
        if (wasEjected) {
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
