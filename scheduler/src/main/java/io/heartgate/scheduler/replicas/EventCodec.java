package io.heartgate.scheduler.replicas;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.heartgate.protocol.HeartbeatRules;
import io.heartgate.scheduler.replicas.GatewayEvent.Debit;
import io.heartgate.scheduler.replicas.GatewayEvent.Ejected;
import io.heartgate.scheduler.replicas.GatewayEvent.Held;
import io.heartgate.scheduler.replicas.GatewayEvent.Placed;
import io.heartgate.scheduler.replicas.GatewayEvent.Readmitted;
import io.heartgate.scheduler.replicas.GatewayEvent.ReplicaBeat;
import io.heartgate.scheduler.replicas.GatewayEvent.ReplicaLeft;
import io.heartgate.scheduler.replicas.GatewayEvent.Usage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Writes and reads the records of the gateway events topic: small JSON objects with a version
 * ({@code "v": 1}), a {@code "type"}, the writing replica, its time and its sequence number (one
 * counter per replica process, so a record written again can be told from a new one). Reading is strict and
 * bounded: a record over {@value #MAX_RECORD_BYTES} bytes, a string over its bound, a usage report
 * of more than {@value #MAX_KEYS} keys, a field of the wrong kind, an unknown version or type, or a
 * record key other than the one its event is kept under is refused with the reason, never half
 * applied. Thread-safe.
 */
public final class EventCodec {

    /** The version this build writes and the only one it reads. */
    public static final int VERSION = 1;
    /** The largest record read: a usage report of {@value #MAX_KEYS} keys fits. */
    public static final int MAX_RECORD_BYTES = 1024 * 1024;
    /** The most keys one usage report names. */
    public static final int MAX_KEYS = 10_000;
    static final int MAX_ID = 256;
    static final int MAX_REASON = 512;
    /** The most requests one report may grant or give back: more is no replica's report. */
    static final long MAX_REQUESTS = 1_000_000_000L;
    /** The most tokens one report may charge. */
    static final long MAX_TOKENS = 1_000_000_000_000_000L;
    /** The longest interval a replica's heartbeat may announce: a minute. */
    static final long MAX_INTERVAL_MS = 60_000;
    private static final Pattern REPLICA_ID = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

    /** Why a record was refused: the label of {@code heartgate_events_rejected_total}. */
    public enum Refusal {
        /** Not JSON, or not an object, or too large. */
        MALFORMED,
        /** A version this build does not read. */
        VERSION,
        /** A type this build does not know. */
        TYPE,
        /** A field missing, of the wrong kind, or out of its bounds; or the wrong record key. */
        FIELD,
        /** Not signed by a key the replicas accept ({@code --heartbeat-keys}). */
        SIGNATURE,
        /** Signed, but written again long after its replica sent it. */
        REPLAYED
    }

    /** What a record decoded to. */
    public sealed interface Decoded {
    }

    /** A well-formed event and its writer's sequence number. */
    public record Event(GatewayEvent event, long seq) implements Decoded {
    }

    /** A refused record, and why. */
    public record Refused(Refusal why, String detail) implements Decoded {
    }

    private static final class Bad extends Exception {
        final Refusal why;

        Bad(Refusal why, String detail) {
            super(detail, null, false, false);
            this.why = why;
        }
    }

    private final ObjectMapper json;

    /** Creates a codec. */
    public EventCodec() {
        json = new ObjectMapper();
        json.getFactory().setStreamReadConstraints(StreamReadConstraints.builder()
                .maxNestingDepth(8).maxStringLength(64 * 1024).maxNumberLength(32).build());
    }

    /** Returns the record key's bytes of {@code e}. */
    public byte[] key(GatewayEvent e) {
        return e.recordKey().getBytes(StandardCharsets.UTF_8);
    }

    /** Returns the record value of {@code e}, the {@code seq}-th record of its replica. */
    public byte[] encode(GatewayEvent e, long seq) {
        ObjectNode o = json.createObjectNode();
        o.put("v", VERSION);
        if (e instanceof Usage u) {
            o.put("type", "usage");
            ObjectNode keys = o.putObject("keys");
            u.byKey().forEach((k, d) -> keys.putArray(k).add(d.requests()).add(d.tokens()));
        } else if (e instanceof Ejected j) {
            o.put("type", "ejected");
            o.put("node", j.nodeId());
            o.put("until", j.untilMs());
            o.put("failures", j.failures());
            o.put("reason", j.reason());
        } else if (e instanceof Held h) {
            o.put("type", "held");
            o.put("node", h.nodeId());
            o.put("until", h.untilMs());
            o.put("reason", h.reason());
        } else if (e instanceof Readmitted r) {
            o.put("type", "readmitted");
            o.put("node", r.nodeId());
        } else if (e instanceof Placed p) {
            o.put("type", "placed");
            o.put("kind", p.kind() == Placed.Kind.RESPONSE ? "response" : "session");
            o.put("id", p.id());
            o.put("node", p.nodeId());
            o.put("bytes", p.bytes());
        } else if (e instanceof ReplicaBeat b) {
            o.put("type", "replica");
            o.put("version", b.version());
            o.put("address", b.address());
            o.put("queue", b.queueDepth());
            o.put("interval", b.intervalMs());
            if (b.longestNodeIntervalMs() >= 0) {
                o.put("tableReadTo", b.tableReadToMs());
                o.put("longestNodeInterval", b.longestNodeIntervalMs());
            }
        } else {
            o.put("type", "left");
        }
        o.put("replica", e.replica());
        o.put("sentAt", e.sentAtMs());
        o.put("seq", seq);
        try {
            return json.writeValueAsBytes(o);
        } catch (JsonProcessingException ex) {
            throw new IllegalStateException("cannot write an event", ex);
        }
    }

    /** Reads one record: its key and value as they came off the topic. */
    public Decoded decode(byte[] recordKey, byte[] value) {
        if (value == null || recordKey == null) {
            return new Refused(Refusal.MALFORMED, "record without a key or a value");
        }
        if (value.length > MAX_RECORD_BYTES) {
            return new Refused(Refusal.MALFORMED, "record of " + value.length + " bytes, over " + MAX_RECORD_BYTES);
        }
        try {
            JsonNode root;
            try {
                root = json.readTree(value);
            } catch (IOException | RuntimeException ex) {
                throw new Bad(Refusal.MALFORMED, "not JSON");
            }
            if (root == null || !root.isObject()) {
                throw new Bad(Refusal.MALFORMED, "not a JSON object");
            }
            JsonNode v = root.get("v");
            if (v == null || !v.isInt() || v.intValue() != VERSION) {
                throw new Bad(Refusal.VERSION, "version " + v + ", this build reads " + VERSION);
            }
            GatewayEvent e = event(root);
            if (!e.recordKey().equals(new String(recordKey, StandardCharsets.UTF_8))) {
                throw new Bad(Refusal.FIELD, "record key is not " + e.recordKey());
            }
            return new Event(e, number(root, "seq", 0, Long.MAX_VALUE));
        } catch (Bad bad) {
            return new Refused(bad.why, bad.getMessage());
        }
    }

    private static GatewayEvent event(JsonNode o) throws Bad {
        String type = text(o, "type", 32);
        String replica = text(o, "replica", 128);
        if (!REPLICA_ID.matcher(replica).matches()) {
            throw new Bad(Refusal.FIELD, "replica id '" + replica + "' is not 1 to 128 of A-Za-z0-9._:-");
        }
        long sentAt = number(o, "sentAt", 0, Long.MAX_VALUE);
        return switch (type) {
            case "usage" -> new Usage(replica, sentAt, keys(o));
            case "ejected" -> new Ejected(replica, sentAt, node(o), number(o, "until", 0, Long.MAX_VALUE),
                    (int) number(o, "failures", 0, Integer.MAX_VALUE), printable(text(o, "reason", MAX_REASON)));
            case "held" -> new Held(replica, sentAt, node(o), number(o, "until", 0, Long.MAX_VALUE),
                    printable(text(o, "reason", MAX_REASON)));
            case "readmitted" -> new Readmitted(replica, sentAt, node(o));
            case "placed" -> {
                String kind = text(o, "kind", 16);
                Placed.Kind k = switch (kind) {
                    case "response" -> Placed.Kind.RESPONSE;
                    case "session" -> Placed.Kind.SESSION;
                    default -> throw new Bad(Refusal.FIELD, "kind '" + kind + "' is not response or session");
                };
                String id = text(o, "id", MAX_ID);
                if (k == Placed.Kind.SESSION && !id.matches("[0-9a-f]{1,16}")) {
                    throw new Bad(Refusal.FIELD, "a session id is 1 to 16 hex digits");
                }
                yield new Placed(replica, sentAt, k, id, node(o), number(o, "bytes", 0, Long.MAX_VALUE));
            }
            case "replica" -> new ReplicaBeat(replica, sentAt, printable(text(o, "version", 64)),
                    printable(text(o, "address", MAX_ID)), (int) number(o, "queue", 0, Integer.MAX_VALUE),
                    number(o, "interval", 1, MAX_INTERVAL_MS),
                    o.has("longestNodeInterval") ? number(o, "tableReadTo", 0, Long.MAX_VALUE) : -1,
                    o.has("longestNodeInterval") ? number(o, "longestNodeInterval", 0, HeartbeatRules.MAX_INTERVAL_MS) : -1);
            case "left" -> new ReplicaLeft(replica, sentAt);
            default -> throw new Bad(Refusal.TYPE, "type '" + type + "'");
        };
    }

    private static Map<String, Debit> keys(JsonNode o) throws Bad {
        JsonNode keys = o.get("keys");
        if (keys == null || !keys.isObject()) {
            throw new Bad(Refusal.FIELD, "keys is not an object");
        }
        if (keys.size() > MAX_KEYS) {
            throw new Bad(Refusal.FIELD, keys.size() + " keys, over " + MAX_KEYS);
        }
        Map<String, Debit> byKey = new HashMap<>(keys.size() * 2);
        Iterator<Map.Entry<String, JsonNode>> it = keys.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> k = it.next();
            JsonNode d = k.getValue();
            if (k.getKey().isEmpty() || k.getKey().length() > MAX_ID || !d.isArray() || d.size() != 2
                    || !d.get(0).canConvertToLong() || !d.get(0).isIntegralNumber()
                    || !d.get(1).canConvertToLong() || !d.get(1).isIntegralNumber()
                    || d.get(0).longValue() < -MAX_REQUESTS || d.get(0).longValue() > MAX_REQUESTS
                    || d.get(1).longValue() < 0 || d.get(1).longValue() > MAX_TOKENS) {
                throw new Bad(Refusal.FIELD, "keys entry is not \"NAME\": [requests, tokens] within their bounds");
            }
            byKey.put(k.getKey(), new Debit(d.get(0).longValue(), d.get(1).longValue()));
        }
        return byKey;
    }

    /** Returns the {@code "node"} field: a node id as heartbeats allow them. */
    private static String node(JsonNode o) throws Bad {
        String id = text(o, "node", MAX_ID);
        if (!HeartbeatRules.isValidNodeId(id)) {
            throw new Bad(Refusal.FIELD, "node is not a node id (1 to " + HeartbeatRules.MAX_NODE_ID_LENGTH
                    + " of A-Za-z0-9._:-)");
        }
        return id;
    }

    /** Returns {@code s} with control and line-separator characters replaced: it is logged and shown. */
    static String printable(String s) {
        return s.replaceAll("[\\p{Cntrl}\\u2028\\u2029]", "?");
    }

    private static String text(JsonNode o, String field, int max) throws Bad {
        JsonNode n = o.get(field);
        if (n == null || !n.isTextual() || n.textValue().isEmpty() || n.textValue().length() > max) {
            throw new Bad(Refusal.FIELD, field + " is not a string of 1 to " + max + " characters");
        }
        return n.textValue();
    }

    private static long number(JsonNode o, String field, long min, long max) throws Bad {
        JsonNode n = o.get(field);
        if (n == null || !n.isIntegralNumber() || !n.canConvertToLong() || n.longValue() < min || n.longValue() > max) {
            throw new Bad(Refusal.FIELD, field + " is not a whole number from " + min + " to " + max);
        }
        return n.longValue();
    }
}
