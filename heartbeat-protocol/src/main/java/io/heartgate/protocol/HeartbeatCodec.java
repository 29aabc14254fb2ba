package io.heartgate.protocol;

import static io.heartgate.protocol.StrictFields.describe;
import static io.heartgate.protocol.StrictFields.intValue;
import static io.heartgate.protocol.StrictFields.optionalDouble;
import static io.heartgate.protocol.StrictFields.optionalInt;
import static io.heartgate.protocol.StrictFields.optionalLong;
import static io.heartgate.protocol.StrictFields.optionalText;
import static io.heartgate.protocol.StrictFields.present;
import static io.heartgate.protocol.StrictFields.requiredText;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import io.heartgate.protocol.StrictFields.Reject;

/**
 * Encodes heartbeats to version-1 JSON and decodes records back, validating every rule of the
 * contract. Decoding never throws: bad input becomes a {@link Decoded.Rejected} that names the rule
 * and field. Thread-safe; one instance can serve every thread.
 *
 * <p>A well-formed heartbeat is read straight from the parser's tokens ({@link StreamingReader});
 * anything that reader declines is read again through a Jackson tree walked by hand, which names the
 * rule of a rejection. Neither binds to the record, because binding coerces ({@code "1"} to 1, 2.5 to
 * 2) and reports type errors in terms of Java classes, while the contract needs strict JSON types and
 * reasons an operator can act on.
 */
public final class HeartbeatCodec {

    /** Largest message accepted, in bytes; a full legal message (1024 long model names) fits. */
    public static final int MAX_MESSAGE_BYTES = 1024 * 1024;

    private final ObjectMapper mapper;
    private final StreamingReader streaming;

    /** Creates a codec with limits suited to untrusted input. */
    public HeartbeatCodec() {
        JsonFactory factory = JsonFactory.builder()
                .streamReadConstraints(StreamReadConstraints.builder()
                        .maxDocumentLength(MAX_MESSAGE_BYTES)
                        .maxStringLength(MAX_MESSAGE_BYTES)
                        .maxNestingDepth(32)
                        .maxNumberLength(64)
                        .build())
                .build();
        // A repeated field is refused as the tree is built (the map's put returns the first value),
        // not by the parser's duplicate detection, which keeps a second set of names per object.
        this.mapper = new ObjectMapper(factory).enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY);
        this.streaming = new StreamingReader(factory);
    }

    /**
     * Decodes one Kafka record: key is the node id (UTF-8), value the JSON or {@code null} for a
     * tombstone. A value whose {@code nodeId} differs from the key is rejected.
     */
    public Decoded decodeRecord(byte[] key, byte[] value) {
        String keyText = key == null ? null : utf8(key);
        if (keyText == null || !HeartbeatRules.isValidNodeId(keyText)) {
            String detail = key == null ? "record has no key"
                    : keyText == null ? "key is not valid UTF-8"
                    : "key is not a valid node id: " + HeartbeatRules.excerpt(keyText);
            return new Decoded.Rejected(new Rejection(Rule.INVALID_KEY, null, detail));
        }
        if (value == null) {
            return new Decoded.Leave(keyText);
        }
        Decoded decoded = decode(value);
        if (decoded instanceof Decoded.Beat beat && !beat.heartbeat().nodeId().equals(keyText)) {
            return new Decoded.Rejected(new Rejection(Rule.KEY_MISMATCH, "nodeId",
                    "nodeId " + beat.heartbeat().nodeId() + " differs from record key " + keyText));
        }
        return decoded;
    }

    /** Decodes one JSON heartbeat; returns a {@link Decoded.Beat} or a {@link Decoded.Rejected}. */
    public Decoded decode(byte[] json) {
        if (json == null) {
            return rejected(Rule.MALFORMED_JSON, null, "no value");
        }
        if (json.length > MAX_MESSAGE_BYTES) {
            return rejected(Rule.MESSAGE_TOO_LARGE, null,
                    json.length + " bytes, limit " + MAX_MESSAGE_BYTES);
        }
        Heartbeat read = streaming.read(json);
        return read != null ? new Decoded.Beat(read) : decodeTree(json);
    }

    /**
     * Decodes through a Jackson tree: every message the streaming reader declines (unknown fields,
     * any fault), so that a rejection names its rule and field. Package-private for the tests that
     * hold the two paths to the same answers.
     */
    Decoded decodeTree(byte[] json) {
        JsonNode root;
        try (JsonParser parser = mapper.createParser(json)) {
            root = mapper.readTree(parser);
            if (root == null || root.isMissingNode()) {
                return rejected(Rule.MALFORMED_JSON, null, "empty message");
            }
            if (!root.isObject()) {
                return rejected(Rule.NOT_AN_OBJECT, null, "expected a JSON object, got " + describe(root));
            }
            try {
                if (parser.nextToken() != null) {
                    return rejected(Rule.TRAILING_DATA, null, "data after the JSON object");
                }
            } catch (JsonProcessingException e) {
                return rejected(Rule.TRAILING_DATA, null, "data after the JSON object");
            }
        } catch (JsonProcessingException e) {
            return rejected(Rule.MALFORMED_JSON, null, withoutJacksonTerms(e.getOriginalMessage()));
        } catch (IOException e) {
            return rejected(Rule.MALFORMED_JSON, null, String.valueOf(e.getMessage()));
        }
        try {
            return new Decoded.Beat(read(root));
        } catch (Reject r) {
            return new Decoded.Rejected(r.rejection());
        }
    }

    /** "Duplicate field 'x'" without the tree's class and the Jackson feature that refused it. */
    private static String withoutJacksonTerms(String message) {
        int cut = message == null ? -1 : message.indexOf(" for `ObjectNode`");
        return cut > 0 && message.startsWith("Duplicate field") ? message.substring(0, cut) : message;
    }

    /** Encodes a heartbeat as compact version-1 JSON (UTF-8), leaving out absent optional fields. */
    public byte[] encode(Heartbeat heartbeat) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        write(heartbeat, out, false);
        return out.toByteArray();
    }

    /** Encodes a heartbeat as indented JSON, for people (the agent's {@code --once}). */
    public String encodePretty(Heartbeat heartbeat) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(512);
        write(heartbeat, out, true);
        return out.toString(StandardCharsets.UTF_8);
    }

    private void write(Heartbeat hb, ByteArrayOutputStream out, boolean pretty) {
        try (JsonGenerator g = mapper.getFactory().createGenerator(out)) {
            if (pretty) {
                g.useDefaultPrettyPrinter();
            }
            g.writeStartObject();
            g.writeNumberField("v", Heartbeat.VERSION);
            g.writeStringField("nodeId", hb.nodeId());
            if (hb.instance() != null) {
                g.writeStringField("instance", hb.instance());
            }
            if (hb.seq() != null) {
                g.writeNumberField("seq", hb.seq());
            }
            g.writeStringField("url", hb.url());
            g.writeStringField("state", hb.state().name());
            g.writeNumberField("weight", hb.weight());
            g.writeNumberField("intervalMs", hb.intervalMs());
            if (hb.capacity() != null) {
                g.writeNumberField("capacity", hb.capacity());
            }
            if (hb.sentAt() != null) {
                g.writeStringField("sentAt", hb.sentAt().toString());
            }
            if (hb.backend() != null) {
                g.writeStringField("backend", hb.backend());
            }
            g.writeArrayFieldStart("models");
            for (String model : hb.models()) {
                g.writeString(model);
            }
            g.writeEndArray();
            Load load = hb.load();
            if (!load.isUnknown()) {
                g.writeObjectFieldStart("load");
                if (load.inFlight() != null) {
                    g.writeNumberField("inFlight", load.inFlight());
                }
                if (load.queued() != null) {
                    g.writeNumberField("queued", load.queued());
                }
                if (load.kvCacheUsage() != null) {
                    g.writeNumberField("kvCacheUsage", load.kvCacheUsage());
                }
                if (load.prefixCacheHitRate() != null) {
                    g.writeNumberField("prefixCacheHitRate", load.prefixCacheHitRate());
                }
                if (load.prefillTps() != null) {
                    g.writeNumberField("prefillTps", load.prefillTps());
                }
                g.writeEndObject();
            }
            if (!hb.gpus().isEmpty()) {
                g.writeArrayFieldStart("gpus");
                for (Gpu gpu : hb.gpus()) {
                    g.writeStartObject();
                    if (gpu.name() != null) {
                        g.writeStringField("name", gpu.name());
                    }
                    if (gpu.utilization() != null) {
                        g.writeNumberField("utilization", gpu.utilization());
                    }
                    if (gpu.memoryUsedMiB() != null) {
                        g.writeNumberField("memoryUsedMiB", gpu.memoryUsedMiB());
                    }
                    if (gpu.memoryTotalMiB() != null) {
                        g.writeNumberField("memoryTotalMiB", gpu.memoryTotalMiB());
                    }
                    g.writeEndObject();
                }
                g.writeEndArray();
            }
            CatalogueFields.write(g, hb);
            g.writeEndObject();
        } catch (IOException e) {
            // Writing to a byte array cannot fail for I/O reasons.
            throw new UncheckedIOException(e);
        }
    }

    private Heartbeat read(JsonNode root) {
        JsonNode v = present(root, "v");
        if (v == null) {
            throw new Reject(Rule.MISSING_FIELD, "v", "is required");
        }
        if (!v.isIntegralNumber()) {
            throw new Reject(Rule.WRONG_TYPE, "v", "must be an integer, got " + describe(v));
        }
        if (v.bigIntegerValue().signum() <= 0) {
            throw new Reject(Rule.UNSUPPORTED_VERSION, "v", "must be 1 or higher, was " + v.asText());
        }
        // Any version >= 1 is read as version 1: newer agents add fields, which are ignored here.
        String nodeId = requiredText(root, "nodeId");
        HeartbeatRules.checkNodeId(nodeId, "nodeId").ifPresent(Reject::raise);
        String url = requiredText(root, "url");
        HeartbeatRules.checkUrl(url).ifPresent(Reject::raise);
        String stateText = requiredText(root, "state");
        NodeState state = parseState(stateText);
        JsonNode intervalNode = present(root, "intervalMs");
        if (intervalNode == null) {
            throw new Reject(Rule.MISSING_FIELD, "intervalMs", "is required");
        }
        int intervalMs = intValue(intervalNode, "intervalMs");
        Integer weight = optionalInt(root, "weight", "weight");
        Integer capacity = optionalInt(root, "capacity", "capacity");
        String instance = optionalText(root, "instance", "instance");
        Long seq = optionalLong(root, "seq", "seq");
        Instant sentAt = parseInstant(optionalText(root, "sentAt", "sentAt"));
        String backend = optionalText(root, "backend", "backend");
        List<String> models = readModels(present(root, "models"));
        Load load = readLoad(present(root, "load"));
        List<Gpu> gpus = readGpus(present(root, "gpus"));
        List<ModelInfo> modelInfo = CatalogueFields.readModelInfo(present(root, "modelInfo"));
        List<LoadedModel> loaded = CatalogueFields.readLoaded(present(root, "loaded"));
        HeartbeatRules.check(nodeId, instance, seq, url, state, weight == null ? 1 : weight, intervalMs,
                backend, models, load, gpus).or(() -> HeartbeatRules.checkCatalogue(modelInfo, loaded))
                .or(() -> HeartbeatRules.checkCapacity(capacity))
                .ifPresent(Reject::raise);
        return new Heartbeat(nodeId, instance, seq, url, state, weight == null ? 1 : weight, intervalMs,
                sentAt, backend, models, load, gpus, modelInfo, loaded, capacity);
    }

    private static NodeState parseState(String text) {
        for (NodeState s : NodeState.values()) {
            if (s.name().equals(text)) {
                return s;
            }
        }
        throw new Reject(Rule.INVALID_STATE, "state",
                "must be UP, DRAINING or DOWN, was " + HeartbeatRules.excerpt(text));
    }

    private static Instant parseInstant(String text) {
        if (text == null) {
            return null;
        }
        try {
            return Instants.parse(text);
        } catch (DateTimeParseException e) {
            throw new Reject(Rule.INVALID_VALUE, "sentAt",
                    "not an ISO-8601 instant: " + HeartbeatRules.excerpt(text));
        }
    }

    private static List<String> readModels(JsonNode node) {
        if (node == null) {
            return List.of();
        }
        if (!node.isArray()) {
            throw new Reject(Rule.WRONG_TYPE, "models", "must be an array of strings, got " + describe(node));
        }
        if (node.size() > HeartbeatRules.MAX_MODELS) {
            throw new Reject(Rule.TOO_MANY_ITEMS, "models",
                    "at most " + HeartbeatRules.MAX_MODELS + " models, was " + node.size());
        }
        List<String> models = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            JsonNode m = node.get(i);
            if (!m.isTextual()) {
                throw new Reject(Rule.WRONG_TYPE, "models[" + i + "]", "must be a string, got " + describe(m));
            }
            // Duplicates carry no meaning; keep the first of each so balancers see a clean list.
            if (!models.contains(m.textValue())) {
                models.add(m.textValue());
            }
        }
        return models;
    }

    private static Load readLoad(JsonNode node) {
        if (node == null) {
            return Load.UNKNOWN;
        }
        if (!node.isObject()) {
            throw new Reject(Rule.WRONG_TYPE, "load", "must be an object, got " + describe(node));
        }
        return new Load(
                optionalInt(node, "inFlight", "load.inFlight"),
                optionalInt(node, "queued", "load.queued"),
                optionalDouble(node, "kvCacheUsage", "load.kvCacheUsage"),
                optionalDouble(node, "prefixCacheHitRate", "load.prefixCacheHitRate"),
                optionalDouble(node, "prefillTps", "load.prefillTps"));
    }

    private static List<Gpu> readGpus(JsonNode node) {
        if (node == null) {
            return List.of();
        }
        if (!node.isArray()) {
            throw new Reject(Rule.WRONG_TYPE, "gpus", "must be an array of objects, got " + describe(node));
        }
        if (node.size() > HeartbeatRules.MAX_GPUS) {
            throw new Reject(Rule.TOO_MANY_ITEMS, "gpus",
                    "at most " + HeartbeatRules.MAX_GPUS + " GPUs, was " + node.size());
        }
        List<Gpu> gpus = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            JsonNode g = node.get(i);
            String field = "gpus[" + i + "]";
            if (!g.isObject()) {
                throw new Reject(Rule.WRONG_TYPE, field, "must be an object, got " + describe(g));
            }
            gpus.add(new Gpu(
                    optionalText(g, "name", field + ".name"),
                    optionalDouble(g, "utilization", field + ".utilization"),
                    optionalLong(g, "memoryUsedMiB", field + ".memoryUsedMiB"),
                    optionalLong(g, "memoryTotalMiB", field + ".memoryTotalMiB")));
        }
        return gpus;
    }

    private static String utf8(byte[] bytes) {
        boolean ascii = true;
        for (byte b : bytes) {
            if (b < 0) {
                ascii = false;
                break;
            }
        }
        if (ascii) { // every byte below 0x80 is that character in UTF-8: nothing to decode
            return new String(bytes, StandardCharsets.ISO_8859_1);
        }
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    private static Decoded rejected(Rule rule, String field, String detail) {
        return new Decoded.Rejected(new Rejection(rule, field, detail == null ? "(no detail)" : detail));
    }
}
