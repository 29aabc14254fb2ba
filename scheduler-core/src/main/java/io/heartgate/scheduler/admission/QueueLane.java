package io.heartgate.scheduler.admission;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One part of a model's gateway queue (its first attempts, or its retries) during one pass of
 * serving: which request it offers next, and what found no room in this pass. First attempts all
 * want the same nodes, so the first that finds them full closes the part for the pass. Retries differ
 * by the nodes they tried, so one that finds its untried nodes full passes over the retries that
 * tried the same nodes, and the others behind it are offered, highest class and oldest first; a pass
 * thus routes once per set of nodes tried, not once per retry. A caller held back from the slots
 * reserved for callers that are not flooding ({@code --reserve-slots}) is passed over the same way,
 * and the others' requests are offered, highest class and oldest first. Under the queue's lock; one
 * pass only.
 */
final class QueueLane {

    final FairQueue<GatewayQueue.Waiter> part;
    final boolean retries;
    /** The model's queue this part belongs to. */
    final ModelQueue model;
    /** First attempts: the head found every candidate full. */
    private boolean closed;
    /** Retries: the sets of nodes tried that left no untried node with room; {@code null} while none did. */
    private Set<Set<String>> fullAfter;
    /** The callers held back from the reserved slots in this pass; {@code null} while none was. */
    private Set<String> heldBack;
    /** Every request waiting when the first was passed over, in the order they are offered after it. */
    private List<FairQueue.Ticket<GatewayQueue.Waiter>> rest;
    /** Where in {@link #rest} to look next: what is before it was passed over or has left. */
    private int cursor;

    QueueLane(ModelQueue model, boolean retries) {
        this.model = model;
        this.part = retries ? model.retries : model.fresh;
        this.retries = retries;
    }

    /** Returns the request this part would send next, or {@code null} when it has none left to try. */
    FairQueue.Ticket<GatewayQueue.Waiter> next() {
        if (closed) {
            return null;
        }
        FairQueue.Ticket<GatewayQueue.Waiter> head = part.peek();
        if (rest == null || head == null || !passOver(head)) {
            return head;
        }
        for (; cursor < rest.size(); cursor++) {
            FairQueue.Ticket<GatewayQueue.Waiter> t = rest.get(cursor);
            if (t.queued() && !passOver(t)) {
                return t;
            }
        }
        return null;
    }

    private boolean passOver(FairQueue.Ticket<GatewayQueue.Waiter> t) {
        return heldBack != null && heldBack.contains(t.caller())
                || fullAfter != null && fullAfter.contains(Set.copyOf(t.item().tried()));
    }

    /** {@code t}'s caller floods and only reserved slots are free: its requests are passed over in this pass. */
    void holdBack(FairQueue.Ticket<GatewayQueue.Waiter> t) {
        if (rest == null) {
            rest = part.byClassThenAge();
        }
        if (heldBack == null) {
            heldBack = new HashSet<>();
        }
        heldBack.add(t.caller());
    }

    /** {@code t} found no room. */
    void full(FairQueue.Ticket<GatewayQueue.Waiter> t) {
        if (!retries) {
            closed = true;
            return;
        }
        if (fullAfter == null) {
            fullAfter = new HashSet<>();
        }
        if (rest == null) {
            rest = part.byClassThenAge();
        }
        fullAfter.add(Set.copyOf(t.item().tried()));
    }

    /** {@code t}, which {@link #next()} offered, is served. */
    void take(FairQueue.Ticket<GatewayQueue.Waiter> t) {
        part.take(t);
    }

    /** Says whether {@code a} goes before {@code b}: higher class, then a retry, then older. */
    static boolean before(FairQueue.Ticket<GatewayQueue.Waiter> a, boolean aRetry,
                          FairQueue.Ticket<GatewayQueue.Waiter> b, boolean bRetry) {
        if (a.priority() != b.priority()) {
            return a.priority() > b.priority();
        }
        if (aRetry != bRetry) {
            return aRetry;
        }
        return a.enqueuedNanos() < b.enqueuedNanos();
    }
}
