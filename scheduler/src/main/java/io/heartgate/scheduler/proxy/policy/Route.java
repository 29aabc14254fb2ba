package io.heartgate.scheduler.proxy.policy;

import io.heartgate.scheduler.table.Node;

/** The outcome of route selection: a node to send to, or why there is none. */
public sealed interface Route {

    /**
     * Send to {@code node}.
     *
     * @param panic whether every remaining candidate was ejected, so ejections were ignored
     */
    record To(Node node, boolean panic) implements Route {
    }

    /** Answer the client with {@code error} instead. */
    record Refused(ErrorType error) implements Route {
        static final Refused NO_UPSTREAM = new Refused(ErrorType.NO_UPSTREAM);
        static final Refused MODEL_NOT_FOUND = new Refused(ErrorType.MODEL_NOT_FOUND);
        static final Refused UNREACHABLE = new Refused(ErrorType.UPSTREAM_UNREACHABLE);
    }
}
