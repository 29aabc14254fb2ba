package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.table.Node;
import java.util.ArrayList;
import java.util.List;

/**
 * The nodes one request was sent to, in order, and the in-flight count it holds on the current
 * one, given back exactly once per attempt. Event-loop confined.
 */
final class Attempts {

    private final List<String> tried = new ArrayList<>(3);
    private final java.util.function.Consumer<Node> slotFreed;
    private Node node;
    private Node held;
    private String loading;
    private Target target;
    private String lastFailure;
    private io.heartgate.scheduler.routing.AffinityPick affinity;

    /** @param slotFreed told whenever a slot on a node is given back (the gateway queue, which looks whether it waits for it) */
    Attempts(java.util.function.Consumer<Node> slotFreed) {
        this.slotFreed = slotFreed;
    }

    /**
     * Starts an attempt on the route's node: counts it in flight there (or takes over the slot the
     * route claimed) and, when {@code loading} is not {@code null}, as a request waiting for the node
     * to load that model. A pinned route (a model-management call) is not counted: it works the
     * node's disk and network, not a generation slot, and may take minutes.
     */
    void begin(Route.To route, Targets targets, String loading) {
        Node n = route.node();
        tried.add(n.id());
        node = n;
        affinity = route.affinity();
        target = targets.of(n.url());
        if (route.pinned() && !route.held()) {
            held = null;
            this.loading = null;
            return;
        }
        if (!route.held()) {
            n.inFlight().increment();
        }
        if (loading != null) {
            n.inFlight().loading(loading, 1);
        }
        held = n;
        this.loading = loading;
    }

    /** Gives back the counts taken for the current attempt; idempotent. */
    void release() {
        Node n = held;
        if (n != null) {
            held = null;
            n.inFlight().decrement();
            if (loading != null) {
                n.inFlight().loading(loading, -1);
                loading = null;
            }
            try {
                slotFreed.accept(n);
            } catch (RuntimeException e) { // the queue's trouble must not stop this exchange's end
                org.slf4j.LoggerFactory.getLogger(Attempts.class).warn("Gateway queue failed on a freed slot of node {}",
                        n.id(), e);
            }
        }
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

    /** Returns the current attempt's node. */
    Node node() {
        return node;
    }

    /** Returns the model the current attempt's node was cold for when it was sent (warm first), or {@code null}. */
    String loading() {
        return loading;
    }

    /** Returns how the affinity strategy placed the current attempt, or {@code null} under another strategy. */
    io.heartgate.scheduler.routing.AffinityPick affinity() {
        return affinity;
    }

    /** Returns the current attempt's node, parsed. */
    Target target() {
        return target;
    }
}
