package io.heartgate.protocol;

/**
 * Holds the outcome of decoding one heartbeat record: a heartbeat, a leave (tombstone) or a
 * rejection. Decoding never throws, so a consumer loop switches over these three cases.
 */
public sealed interface Decoded permits Decoded.Beat, Decoded.Leave, Decoded.Rejected {

    /** A valid heartbeat. */
    record Beat(Heartbeat heartbeat) implements Decoded {
    }

    /** A tombstone: the node with this id left and must be removed at once. */
    record Leave(String nodeId) implements Decoded {
    }

    /** A message that broke a rule; carries the node id from the record key when it was readable. */
    record Rejected(Rejection rejection) implements Decoded {
    }
}
