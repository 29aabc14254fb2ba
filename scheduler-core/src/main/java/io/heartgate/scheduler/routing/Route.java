package io.heartgate.scheduler.routing;

import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.table.Node;

/** The outcome of route selection: a node to send to, or why there is none. */
public sealed interface Route {

    /**
     * Send to the node of {@code lease}.
     *
     * @param lease the request's hold on its node, taken when it was chosen: given back exactly once
     * @param panic whether every remaining candidate was ejected, so ejections were ignored
     * @param pinned whether the request is for this node only (a model-management call): never
     *     retried on another
     * @param affinity how the {@code affinity} strategy placed it, or {@code null} under another strategy
     */
    record To(Lease lease, boolean panic, boolean pinned, AffinityPick affinity) implements Route {

        /** Returns the node the request goes to. */
        public Node node() {
            return lease.node();
        }

        /** Send to {@code node} and to no other, holding none of its slots. */
        public static To pinned(Node node) {
            return new To(Lease.uncounted(node), false, true, null);
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
