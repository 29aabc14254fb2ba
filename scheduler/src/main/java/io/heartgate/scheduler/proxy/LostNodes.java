package io.heartgate.scheduler.proxy;

import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.status.Ejection;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Moves the requests of one event loop awaiting an answer from a node the table stopped routing
 * (its heartbeat says DOWN, it left or expired, or it was ejected while others are not) to other
 * nodes, as a connect failure would: nothing reached their clients yet; and gives up on its answers
 * being relayed that have gone silent ({@link Timeouts#rescueSilent}), which then move to another
 * node where they can ({@link Migration}), looked for twice a second. Otherwise cheap when nothing changed:
 * it looks only when the table's snapshot or the ejections are new. Event-loop confined.
 */
final class LostNodes {

    /** How long a stream from a lost node must have been silent to be given up on (it may then move). */
    static final long SILENT_MS = 1000;

    private final Timeouts timeouts;
    private final Supplier<TableSnapshot> table;
    private final EjectionView routing;
    private final PassiveHealth health;
    private final Rescues rescues;
    private TableSnapshot checkedAt;
    private long ejectionsCheckedAt = -1;
    private long nextSilentCheckMs;

    /** @param rescues where every loop's moves are gathered into one log line per node */
    LostNodes(Timeouts timeouts, Supplier<TableSnapshot> table, EjectionView routing, PassiveHealth health,
              Rescues rescues) {
        this.timeouts = timeouts;
        this.table = table;
        this.routing = routing;
        this.health = health;
        this.rescues = rescues;
    }

    /** Moves what waits on lost nodes, if the table or the ejections changed; called by the loop's sweep. */
    void rescue() {
        TableSnapshot snapshot = table.get();
        long ejections = health.ejectionCount();
        if (snapshot != checkedAt || ejections != ejectionsCheckedAt) {
            checkedAt = snapshot;
            ejectionsCheckedAt = ejections;
            // Gone or DOWN: move whatever waits there. Only held out (ejected, flapping): move a
            // request only where another candidate for its model is not held out too.
            Map<String, Integer> moved = timeouts.rescue(id -> whyLost(snapshot, id) != null,
                    id -> isHeldOnly(snapshot, id));
            moved.forEach((id, n) -> rescues.moved(id, n, whyLost(snapshot, id), timeouts.nowMs()));
        }
        // A stream goes silent some time after its node is lost: looked for twice a second.
        if (timeouts.nowMs() >= nextSilentCheckMs) {
            nextSilentCheckMs = timeouts.nowMs() + SILENT_MS / 2;
            timeouts.rescueSilent(id -> whyLost(snapshot, id) != null, SILENT_MS);
        }
        rescues.flush(timeouts.nowMs());
    }

    private String whyLost(TableSnapshot snapshot, String id) {
        Node n = snapshot.node(id);
        if (n == null) {
            return "it left the table: a tombstone, or it expired";
        }
        if (n.state() == NodeState.DOWN) {
            return "its heartbeat says DOWN";
        }
        if (routing.isEjected(id)) {
            return routing.ejection(id).map(Ejection::describe).orElse("it was ejected or is held for flapping");
        }
        return null;
    }

    private static boolean isHeldOnly(TableSnapshot snapshot, String id) {
        Node n = snapshot.node(id);
        return n != null && n.state() != NodeState.DOWN;
    }
}
