package io.heartgate.scheduler.routing;

import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.table.Node;

/** The outcome of route selection: a node to send to, or why there is none. */
public sealed interface Route {

    /**
     * Send to {@code node}.
     *
     * @param panic whether every remaining candidate was ejected, so ejections were ignored
     * @param pinned whether the request is for this node only (a model-management call): never
     *     retried on another
     * @param held whether one of the node's slots is already counted for the request (a node of known
     *     capacity, claimed when chosen); the attempt then takes over that count instead of adding one
     * @param affinity how the {@code affinity} strategy placed it, or {@code null} under another strategy
     */
    record To(Node node, boolean panic, boolean pinned, boolean held, AffinityPick affinity) implements Route {

        /** Send to {@code node}, retried elsewhere as the retry policy says. */
        public To(Node node, boolean panic) {
            this(node, panic, false, false, null);
        }

        /** Send to {@code node}, outside the {@code affinity} strategy. */
        public To(Node node, boolean panic, boolean pinned, boolean held) {
            this(node, panic, pinned, held, null);
        }

        /** Send to {@code node} and to no other. */
        public static To pinned(Node node) {
            return new To(node, false, true, false);
        }

        /** Gives back the slot claimed for a route that will not be sent after all. */
        public void unclaim() {
            if (held) {
                node.inFlight().decrement();
            }
        }
    }

    /** Answer the client with {@code error} instead. */
    record Refused(ErrorType error) implements Route {
        static final Refused NO_UPSTREAM = new Refused(ErrorType.NO_UPSTREAM);
        static final Refused MODEL_NOT_FOUND = new Refused(ErrorType.MODEL_NOT_FOUND);
        static final Refused UNREACHABLE = new Refused(ErrorType.UPSTREAM_UNREACHABLE);
        /** Every candidate is at its capacity: the request waits in the gateway queue. */
        public static final Refused FULL = new Refused(ErrorType.OVERLOADED);
    }
}
