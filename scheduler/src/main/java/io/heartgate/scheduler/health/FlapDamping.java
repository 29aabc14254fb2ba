package io.heartgate.scheduler.health;

import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.status.Ejection;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds out of routing a node that keeps changing its mind ({@code --flap-limit} changes in
 * {@code --flap-window}): a server that crashes and restarts in a loop, or a probe on the edge of
 * its timeout, otherwise draws a share of requests each time it comes back and fails them. A change
 * is the node starting or ceasing to be routable: its heartbeat going UP to DOWN or back, joining
 * as UP, or expiring or leaving while UP. Joining as DOWN, or expiring after DOWN, changes nothing,
 * so one restart of a node (DOWN, gone, back DOWN while its server starts, UP) is two changes, not five.
 *
 * <p>More than {@code limit} changes within one window hold the node for a back-off of one window,
 * doubling (up to 32 windows) with each change while it is held; it is released once the back-off
 * has passed and it has been steady (no change) for one window. Fed the table's snapshots as a
 * listener (the discovery thread); read by routing on any thread. Time comes from the injected clock.
 *
 * <p>Each hold is told to a {@link Listener} (the other replicas, through the events topic), and the
 * others' holds are adopted ({@link #adopt}) until their end: a replica started after a node's
 * changes never saw them, and would otherwise route to a node the others hold out.
 */
public final class FlapDamping implements EjectionView, Consumer<TableSnapshot> {

    /** Hears each hold this replica starts or lengthens. */
    @FunctionalInterface
    public interface Listener {
        /** Called on the discovery thread; must not block. */
        void held(String nodeId, Ejection hold);
    }

    private static final Logger log = LoggerFactory.getLogger(FlapDamping.class);
    private static final int MAX_DOUBLINGS = 5;

    private static final class Record {
        final ArrayDeque<Instant> changes = new ArrayDeque<>();
        Instant lastChange;
        Instant heldUntil;
        int holdsInARow;
    }

    private final Clock clock;
    private final int limit;
    private final Duration window;
    private final Map<String, Record> records = new HashMap<>(); // discovery thread only
    private final Map<String, Ejection> holds = new ConcurrentHashMap<>();
    /** Other replicas' holds, by node id: written by the events reader, pruned by the discovery thread. */
    private final Map<String, Ejection> adopted = new ConcurrentHashMap<>();
    private volatile Listener listener = (id, hold) -> { };
    /** The node ids of the last snapshot looked through, in its (id) order, and which of them were routable. */
    private String[] lastIds = new String[0];
    private boolean[] lastIn = new boolean[0];
    /** The structure of the last snapshot looked through ({@link TableSnapshot#structure}). */
    private long structure = -1;

    /**
     * Creates the damper; {@code limit} 0 turns it off.
     *
     * @param limit changes allowed within {@code window}
     */
    public FlapDamping(Clock clock, int limit, Duration window) {
        this.clock = clock;
        this.limit = limit;
        this.window = window;
    }

    /** Tells {@code to} of each hold from now on. */
    public void share(Listener to) {
        this.listener = to;
    }

    /**
     * Holds {@code nodeId} for {@code heldFor} from now (at most 32 windows, the longest hold this
     * replica gives) because replica {@code replica} holds it for flapping; a longer hold already in
     * force stays. Nothing with damping off ({@code limit} 0).
     */
    public void adopt(String nodeId, Duration heldFor, String reason, String replica) {
        if (limit == 0 || heldFor.isNegative() || heldFor.isZero()) {
            return;
        }
        // No longer than this replica's own longest hold: the longest back-off, 32 windows.
        Duration longest = window.multipliedBy(1L << MAX_DOUBLINGS);
        heldFor = heldFor.compareTo(longest) > 0 ? longest : heldFor;
        Ejection hold = new Ejection(clock.instant().plus(heldFor), 0, reason + " (by replica " + replica + ")");
        Ejection kept = adopted.merge(nodeId, hold, (a, b) -> a.until().isAfter(b.until()) ? a : b);
        if (kept == hold) {
            log.info("Node {} held out of routing for {} s: replica {} holds it ({})", nodeId, heldFor.toSeconds(),
                    replica, reason);
        }
    }

    @Override
    public void accept(TableSnapshot snapshot) {
        if (limit == 0) {
            return;
        }
        Instant now = clock.instant();
        release(now); // first: a change after a hold ran out starts afresh, it does not double it
        if (snapshot.structure() == structure) {
            return; // renewals only: no node came, went or changed its state
        }
        structure = snapshot.structure();
        // Both snapshots list their nodes in id order: one walk over the two finds every change,
        // with no map of the fleet built for it.
        List<Node> nodes = snapshot.nodes();
        String[] ids = new String[nodes.size()];
        boolean[] in = new boolean[nodes.size()];
        int j = 0;
        for (int i = 0; i < nodes.size(); i++) {
            Node n = nodes.get(i);
            String id = n.id();
            while (j < lastIds.length && lastIds[j].compareTo(id) < 0) {
                gone(j++, now);
            }
            boolean before = false; // routable in the last snapshot (absent: not)
            if (j < lastIds.length && lastIds[j].equals(id)) {
                before = lastIn[j++];
            }
            // DRAINING is an operator's choice, not a flap; it counts as neither: a draining node
            // keeps what it was (joining draining: not in yet).
            boolean routable = n.state() != NodeState.DOWN && (n.state() == NodeState.UP || before);
            ids[i] = id;
            in[i] = routable;
            if (before != routable) {
                // Stamped with the heartbeat's broker time, so that the look-back's history, read in
                // a burst at the scheduler's start, is counted when it happened, not all at once now.
                Instant at = n.lastSeen().isAfter(now) ? now : n.lastSeen();
                changed(id, at, now); // joined UP, or UP and DOWN swapped
            }
        }
        while (j < lastIds.length) {
            gone(j++, now);
        }
        lastIds = ids;
        lastIn = in;
    }

    /** The last snapshot's node at {@code j} is listed no more: a change if it was routable. */
    private void gone(int j, Instant now) {
        if (lastIn[j]) {
            changed(lastIds[j], now, now); // left or expired while routable
        }
    }

    private void changed(String id, Instant at, Instant now) {
        Record r = records.computeIfAbsent(id, k -> new Record());
        if (r.lastChange == null || at.isAfter(r.lastChange)) {
            r.lastChange = at;
        }
        r.changes.addLast(at);
        r.changes.removeIf(t -> !t.isAfter(now.minus(window)));
        if (r.changes.isEmpty()) {
            return; // history older than the window: nothing to hold for
        }
        boolean held = r.heldUntil != null;
        if (held || r.changes.size() > limit) {
            r.holdsInARow = held ? r.holdsInARow + 1 : 1;
            Duration backoff = window.multipliedBy(1L << Math.min(r.holdsInARow - 1, MAX_DOUBLINGS));
            r.heldUntil = r.lastChange.plus(backoff);
            Ejection hold = new Ejection(releaseAt(r), 0, "flapping: " + r.changes.size() + " changes in "
                    + window.toSeconds() + " s; held for " + backoff.toSeconds() + " s");
            holds.put(id, hold);
            listener.held(id, hold);
            if (!held) {
                log.warn("Node {} is flapping ({} changes in {} s): held out of routing for {} s", id,
                        r.changes.size(), window.toSeconds(), backoff.toSeconds());
            }
        }
    }

    private Instant releaseAt(Record r) {
        Instant steady = r.lastChange.plus(window);
        return steady.isAfter(r.heldUntil) ? steady : r.heldUntil;
    }

    /** Releases the nodes whose hold is over; called with each snapshot and by {@link #isEjected}'s readers' clock. */
    private void release(Instant now) {
        for (Map.Entry<String, Record> e : records.entrySet()) {
            Record r = e.getValue();
            if (r.heldUntil != null && !now.isBefore(releaseAt(r))) {
                r.heldUntil = null;
                r.holdsInARow = 0;
                r.changes.clear();
                holds.remove(e.getKey());
                log.info("Node {} steady for {} s: released from its flap hold", e.getKey(), window.toSeconds());
            }
        }
        records.values().removeIf(r -> r.heldUntil == null && (r.lastChange == null
                || r.lastChange.isBefore(now.minus(window))));
        adopted.values().removeIf(e -> !now.isBefore(e.until()));
    }

    @Override
    public boolean anyEjected() {
        return !holds.isEmpty() || !adopted.isEmpty();
    }

    @Override
    public boolean isEjected(String nodeId) {
        return anyEjected() && ejection(nodeId).isPresent();
    }

    @Override
    public Optional<Ejection> ejection(String nodeId) {
        Instant now = clock.instant();
        Ejection own = holds.get(nodeId);
        Ejection theirs = adopted.get(nodeId);
        own = own != null && now.isBefore(own.until()) ? own : null;
        theirs = theirs != null && now.isBefore(theirs.until()) ? theirs : null;
        if (own == null || theirs == null) {
            return Optional.ofNullable(own != null ? own : theirs);
        }
        return Optional.of(theirs.until().isAfter(own.until()) ? theirs : own);
    }
}
