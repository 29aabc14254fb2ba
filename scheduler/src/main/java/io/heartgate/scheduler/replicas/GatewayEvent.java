package io.heartgate.scheduler.replicas;

import java.util.Map;

/**
 * One record of the gateway events topic: what a replica learnt from traffic and the others should
 * know. Each names the replica that wrote it and when ({@code sentAtMs}, its wall clock); the
 * record's Kafka key ({@link #recordKey}) is what compaction keeps the latest of.
 */
public sealed interface GatewayEvent {

    /** Returns the id of the replica that wrote it. */
    String replica();

    /** Returns when its replica wrote it, epoch milliseconds. */
    long sentAtMs();

    /** Returns the Kafka record key: one per thing described, so compaction keeps its latest state. */
    String recordKey();

    /** Requests granted (negative: given back) and tokens charged by one key on one replica. */
    record Debit(long requests, long tokens) {
    }

    /** What one replica granted and charged since its last report, by API key name. */
    record Usage(String replica, long sentAtMs, Map<String, Debit> byKey) implements GatewayEvent {
        @Override
        public String recordKey() {
            return "usage/" + replica;
        }
    }

    /** A node the replica ejected (connect failures, or stalled) until {@code untilMs}. */
    record Ejected(String replica, long sentAtMs, String nodeId, long untilMs, int failures, String reason)
            implements GatewayEvent {
        @Override
        public String recordKey() {
            return "node/" + nodeId;
        }
    }

    /**
     * A node the replica holds out of routing for flapping until {@code untilMs}: the others hold it
     * too, so a replica that started after the node's changes (and so never counted them) agrees.
     */
    record Held(String replica, long sentAtMs, String nodeId, long untilMs, String reason) implements GatewayEvent {
        @Override
        public String recordKey() {
            return "held/" + nodeId;
        }
    }

    /** A node, ejected before, that answered the replica again. */
    record Readmitted(String replica, long sentAtMs, String nodeId) implements GatewayEvent {
        @Override
        public String recordKey() {
            return "node/" + nodeId;
        }
    }

    /** Which node holds a conversation: a Responses API id, or an affinity key's home (its hash, in hex). */
    record Placed(String replica, long sentAtMs, Kind kind, String id, String nodeId, long bytes)
            implements GatewayEvent {
        /** What {@code id} names. */
        public enum Kind {
            /** A response id ({@code resp_...}) of OpenAI's Responses API. */
            RESPONSE,
            /** The hash of an affinity key and model, 16 hex digits. */
            SESSION
        }

        @Override
        public String recordKey() {
            return (kind == Kind.RESPONSE ? "response/" : "session/") + id;
        }
    }

    /**
     * A replica's own heartbeat: who it is, where its proxy listens, how deep its queue is, and,
     * while its node table is complete (caught up with the heartbeat topic, not in
     * self-preservation), up to when its table holds the heartbeat topic ({@code tableReadToMs})
     * and the longest heartbeat interval among the nodes it lists: how far back a replica starting
     * must read the heartbeat topic. Both -1 while it is not.
     */
    record ReplicaBeat(String replica, long sentAtMs, String version, String address, int queueDepth,
                       long intervalMs, long tableReadToMs, long longestNodeIntervalMs) implements GatewayEvent {
        @Override
        public String recordKey() {
            return "replica/" + replica;
        }
    }

    /** A replica leaving: it stopped in order. */
    record ReplicaLeft(String replica, long sentAtMs) implements GatewayEvent {
        @Override
        public String recordKey() {
            return "replica/" + replica;
        }
    }
}
