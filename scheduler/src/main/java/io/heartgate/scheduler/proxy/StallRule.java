package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The stall rule, applied to one event loop's exchanges at most once a second: a node that sent
 * this scheduler nothing (no response head, no chunk) for the stall timeout, while one of the loop's
 * streaming requests has waited that whole time for its first token, and another node serving that
 * request's model answered in that time or has nothing in flight (it is not slow too: a model slow
 * everywhere is no stall), is ejected as stalled; {@link LostNodes} then moves what waits on it. A
 * node that answered anything in that window is busy (its own queue), not stalled; a non-streaming
 * request is no evidence, since its answer comes whole, after however long its generation takes;
 * nor is a request sent while its node had to load its model (warm first tracks that), since
 * loading a large model takes longer than the stall timeout. Event-loop confined.
 */
final class StallRule {

    private static final long CHECK_MS = 1000;

    private final Timeouts timeouts;
    private final Supplier<TableSnapshot> table;
    private final EjectionView routing;
    private final PassiveHealth health;
    private final long stallTimeoutMs;
    private final List<Timeouts.Watched> stuck = new ArrayList<>();
    private long nextCheckMs;

    /** @param stallTimeoutMs the stall timeout; 0 turns the rule off */
    StallRule(Timeouts timeouts, Supplier<TableSnapshot> table, EjectionView routing, PassiveHealth health,
              long stallTimeoutMs) {
        this.timeouts = timeouts;
        this.table = table;
        this.routing = routing;
        this.health = health;
        this.stallTimeoutMs = stallTimeoutMs;
    }

    /** Applies the rule if a second passed since it last did; called by the loop's sweep. */
    void check() {
        long now = timeouts.nowMs();
        if (stallTimeoutMs <= 0 || now < nextCheckMs) {
            return;
        }
        nextCheckMs = now + CHECK_MS;
        long since = now - stallTimeoutMs;
        TableSnapshot snapshot = table.get();
        stuck.clear();
        timeouts.awaitingSince(since, stuck::add);
        for (Timeouts.Watched w : stuck) {
            String id = w.awaitedNode();
            Node n = id == null ? null : snapshot.node(id);
            if (n == null || n.inFlight().lastAnswerMs() >= since || routing.isEjected(id) || !w.streams()
                    || w.waitsForLoad()) {
                continue;
            }
            Node peer = unstuckPeer(snapshot, id, w.model(), since);
            if (peer != null) {
                health.stalled(id, "no first token for " + stallTimeoutMs / 1000 + " s to streams waiting on it while "
                        + peer.id() + (w.model() == null ? "" : ", serving " + w.model() + ",")
                        + (peer.inFlight().lastAnswerMs() >= since ? " answered" : " had nothing to do"));
            }
        }
        stuck.clear();
    }

    /**
     * Returns a node other than {@code id} serving {@code model} that answered at or after
     * {@code since}, or has no request of this scheduler in flight (every client may be waiting on
     * the stalled node), or null when every one is as silent and busy.
     */
    private static Node unstuckPeer(TableSnapshot snapshot, String id, String model, long since) {
        for (Node other : snapshot.candidates(model)) {
            if (!other.id().equals(id) && (other.inFlight().lastAnswerMs() >= since || other.inFlight().get() == 0)) {
                return other;
            }
        }
        return null;
    }
}
