package io.heartgate.scheduler.proxy;

import java.util.EnumSet;

/** Where an {@link Exchange} stands; {@link #to} allows only the transitions listed here. */
enum Phase {
    /** Choosing the node for the next attempt. */
    ROUTING,
    /** Opening a new connection to the node. */
    CONNECTING,
    /** Request sent; waiting for the response head. */
    AWAITING_HEAD,
    /** Reading away a node's overload answer before trying another node. */
    DISCARDING,
    /** Response head sent to the client; relaying the body. */
    RELAYING,
    /** Answered, cut or abandoned; nothing more happens. */
    DONE;

    private EnumSet<Phase> next;

    static {
        ROUTING.next = EnumSet.of(CONNECTING, AWAITING_HEAD, DONE);
        CONNECTING.next = EnumSet.of(AWAITING_HEAD, ROUTING, DONE);
        AWAITING_HEAD.next = EnumSet.of(DISCARDING, RELAYING, CONNECTING, ROUTING, DONE);
        DISCARDING.next = EnumSet.of(ROUTING, DONE);
        RELAYING.next = EnumSet.of(DONE);
        DONE.next = EnumSet.noneOf(Phase.class);
    }

    /**
     * Returns {@code target} when this phase may be followed by it.
     *
     * @throws IllegalStateException for a transition the relay must never make
     */
    Phase to(Phase target) {
        if (!next.contains(target)) {
            throw new IllegalStateException("exchange cannot go from " + this + " to " + target);
        }
        return target;
    }

    /** Returns whether the node's response head is still to come. */
    boolean beforeHead() {
        return this == AWAITING_HEAD;
    }
}
