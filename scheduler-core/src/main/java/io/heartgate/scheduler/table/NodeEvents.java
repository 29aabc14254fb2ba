package io.heartgate.scheduler.table;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The table's log of what happens to nodes: joins, restarts, state changes, departures, expiries,
 * one line each with the node id first. While the table is replayed from the topic at a
 * scheduler's start ({@link #replaying}), joins and restarts go to debug: they are history, not
 * news, and at 100,000 nodes a line each would cost the start seconds; the catch-up's summary
 * counts them. Writer thread only.
 */
final class NodeEvents {

    private static final Logger log = LoggerFactory.getLogger(NodeTable.class);

    private boolean replaying;

    /** Sets whether the table is being replayed from the topic at start. */
    void replaying(boolean value) {
        this.replaying = value;
    }

    void joined(String id, Heartbeat hb) {
        if (replaying) {
            log.debug("Node {} joined at {} ({}, weight {})", id, hb.url(), hb.state(), hb.weight());
        } else {
            log.info("Node {} joined at {} ({}, weight {}, models {})", id, hb.url(), hb.state(), hb.weight(),
                    hb.models().isEmpty() ? "any" : hb.models());
        }
    }

    void restarted(String id, Heartbeat hb, Heartbeat last) {
        if (replaying) {
            log.debug("Node {} restarted (instance {} replaces {})", id, hb.instance(), last.instance());
        } else {
            log.info("Node {} restarted (instance {} replaces {})", id, hb.instance(), last.instance());
        }
    }

    void left(String id) {
        log.info("Node {} left (its agent published a tombstone)", id);
    }

    void expired(Node n, long silentMs, int missedHeartbeats) {
        log.info("Node {} expired after {} ms without a heartbeat ({} missed intervals of {} ms)", n.id(),
                silentMs, missedHeartbeats, n.heartbeat().intervalMs());
    }

    void state(String id, Heartbeat hb) {
        if (hb.state() == NodeState.DOWN) {
            log.warn("Node {} is DOWN: its agent reports the inference server failing its health check", id);
        } else if (hb.state() == NodeState.DRAINING) {
            log.info("Node {} is DRAINING: no new requests go to it", id);
        } else {
            log.info("Node {} is UP again", id);
        }
    }
}
