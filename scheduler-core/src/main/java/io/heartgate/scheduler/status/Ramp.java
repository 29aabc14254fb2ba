package io.heartgate.scheduler.status;

/**
 * Tells routing which nodes are warming up and how much of their full share of new requests they
 * get now (slow start): a node that joined or came back a moment ago may be slow until its caches
 * and compiled graphs are warm. Read on the request path, so {@link #any()} must be cheap.
 */
public interface Ramp {

    /** No node ever ramps. */
    Ramp NONE = new Ramp() {
        @Override
        public boolean any() {
            return false;
        }

        @Override
        public double share(String nodeId) {
            return 1.0;
        }
    };

    /** Returns whether some node may be ramping now; {@code false} lets routing skip the rest. */
    boolean any();

    /** Returns the share of its full load {@code nodeId} gets now: more than 0, at most 1. */
    double share(String nodeId);
}
