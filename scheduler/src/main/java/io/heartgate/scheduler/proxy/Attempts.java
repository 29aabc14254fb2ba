package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.routing.AffinityPick;
import io.heartgate.scheduler.routing.Lease;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.table.Node;
import java.util.ArrayList;
import java.util.List;

/**
 * The nodes one request was sent to, in order, and the {@link Lease} of the current attempt: the
 * one owner of its in-flight count there. Event-loop confined.
 */
final class Attempts {

    private final List<String> tried = new ArrayList<>(3);
    private Lease lease;
    private Target target;
    private String lastFailure;
    private AffinityPick affinity;

    /**
     * Starts an attempt on the route's node, holding its lease, and, when {@code loading} is not
     * {@code null}, counting it as a request waiting for the node to load that model.
     */
    void begin(Route.To route, Target target, String loading) {
        lease = route.lease();
        tried.add(lease.node().id());
        affinity = route.affinity();
        this.target = target;
        lease.loading(loading);
    }

    /** Returns the current attempt's lease, or {@code null} before the first. */
    Lease lease() {
        return lease;
    }

    /** Notes why the current attempt failed, for the message when every node failed; {@code null} is ignored. */
    void failed(String why) {
        if (why != null) {
            lastFailure = why;
        }
    }

    /** Returns why the last failed attempt failed, or {@code null}. */
    String lastFailure() {
        return lastFailure;
    }

    /** Returns the attempts made so far (a resend to the same node is not one). */
    int count() {
        return tried.size();
    }

    /** Returns the ids of the nodes tried, in order. */
    List<String> tried() {
        return tried;
    }

    /** Returns the current attempt's node, or {@code null} before the first. */
    Node node() {
        return lease == null ? null : lease.node();
    }

    /** Returns the model the current attempt's node was cold for when it was sent (warm first), or {@code null}. */
    String loading() {
        return lease == null ? null : lease.loading();
    }

    /** Returns how the affinity strategy placed the current attempt, or {@code null} under another strategy. */
    AffinityPick affinity() {
        return affinity;
    }

    /** Returns the current attempt's node, parsed. */
    Target target() {
        return target;
    }
}
