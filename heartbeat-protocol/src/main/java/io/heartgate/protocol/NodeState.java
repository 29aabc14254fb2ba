package io.heartgate.protocol;

/**
 * Declares what a node's agent says about its inference server. Only {@link #UP} nodes take
 * new work; the others stay visible so operators can see why a node is idle.
 */
public enum NodeState {
    /** The server passed its health probe and takes new requests. */
    UP,
    /** The operator is draining the node: in-flight streams finish, no new requests arrive. */
    DRAINING,
    /** The server failed its health probe (or the probe timed out). */
    DOWN
}
