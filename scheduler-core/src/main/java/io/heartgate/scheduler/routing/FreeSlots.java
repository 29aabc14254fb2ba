package io.heartgate.scheduler.routing;

/**
 * The slots of the nodes that may serve a request: how many are free for this scheduler's
 * requests now, and how many there are in all (each node's capacity less the work others sent it),
 * what the gateway queue's reserve is measured against. Unbounded when a node's capacity is unknown.
 */
public record FreeSlots(int free, int total) {

    /** A node of unknown capacity is among them: it always has room. */
    public static final FreeSlots UNBOUNDED = new FreeSlots(Integer.MAX_VALUE, Integer.MAX_VALUE);
}
