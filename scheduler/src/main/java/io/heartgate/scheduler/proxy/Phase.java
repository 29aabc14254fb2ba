package io.heartgate.scheduler.proxy;

import java.util.EnumSet;

/**
 * Where an {@link Exchange} stands; {@link #to} allows only the transitions listed here. While the
 * request is with a node, where the conversation with it stands is {@link UpstreamSide.State}.
 */
enum Phase {
    /** Choosing the node for the next attempt (the gateway queue included). */
    ROUTING,
    /** Sent to, or being sent to, a node whose answer is not relayed yet. */
    SENT,
    /** Response head sent to the client; relaying the body (an answer that moves goes back to routing). */
    RELAYING,
    /** Answered, cut or abandoned; nothing more happens. */
    DONE;

    private EnumSet<Phase> next;

    static {
        ROUTING.next = EnumSet.of(SENT, DONE);
        SENT.next = EnumSet.of(RELAYING, ROUTING, DONE);
        RELAYING.next = EnumSet.of(ROUTING, DONE); // ROUTING: the answer moves to another node mid-stream
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
}
