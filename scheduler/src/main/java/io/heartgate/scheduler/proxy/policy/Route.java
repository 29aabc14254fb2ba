package io.heartgate.scheduler.proxy.policy;

import io.heartgate.scheduler.table.Node;

/** The outcome of route selection: a node to send to, or why there is none. */
public sealed interface Route {

    /**
     * Send to {@code node}.
     *
     * @param panic whether every remaining candidate was ejected, so ejections were ignored
     * @param pinned whether the request is for this node only (a model-management call): never
     *     retried on another
     */
    record To(Node node, boolean panic, boolean pinned) implements Route {

        /** Send to {@code node}, retried elsewhere as the retry policy says. */
        public To(Node node, boolean panic) {
            this(node, panic, false);
        }

        /** Send to {@code node} and to no other. */
        public static To pinned(Node node) {
            return new To(node, false, true);
        }
    }

    /** Answer the client with {@code error} instead. */
    record Refused(ErrorType error) implements Route {
        static final Refused NO_UPSTREAM = new Refused(ErrorType.NO_UPSTREAM);
        static final Refused MODEL_NOT_FOUND = new Refused(ErrorType.MODEL_NOT_FOUND);
        static final Refused UNREACHABLE = new Refused(ErrorType.UPSTREAM_UNREACHABLE);
    }
}
