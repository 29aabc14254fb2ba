package io.heartgate.protocol;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.time.DateTimeException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a heartbeat straight from the JSON parser's tokens, without a tree: the path a well-formed
 * heartbeat takes. A scheduler among 100,000 nodes decodes tens of thousands of heartbeats a second,
 * and after a restart it reads minutes of them as fast as it can; building a tree first (a map and
 * a node per field) was most of that cost.
 *
 * <p>It accepts only what it reads exactly as {@link HeartbeatCodec}'s tree reader would: the fields
 * the contract names, each once, of the right JSON type, JSON null as absent, every rule met (the
 * {@link Heartbeat} constructor checks them); other fields skipped, as the tree skips them, when
 * they hold a plain value. Anything else (an object or array under a name it does not know, a wrong
 * type, a repeated field, a broken rule, malformed JSON, data after the object) makes it decline
 * with {@code null}, and the codec reads the message again through the tree, which names the rule of
 * a rejection. So the two paths cannot disagree: this one can only decline.
 */
final class StreamingReader {

    /** Declines without a stack trace: control flow inside {@link #read}, never seen by callers. */
    private static final class Decline extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Decline() {
            super(null, null, false, false);
        }
    }

    private static final Decline DECLINE = new Decline();

    private final JsonFactory factory;

    StreamingReader(JsonFactory factory) {
        this.factory = factory;
    }

    /** Returns the heartbeat {@code json} holds, or {@code null} when the tree reader must judge it. */
    Heartbeat read(byte[] json) {
        try (JsonParser p = factory.createParser(json)) {
            Heartbeat heartbeat = root(p);
            return p.nextToken() == null ? heartbeat : null;
        } catch (Decline | IOException | IllegalArgumentException | DateTimeException e) {
            return null; // IllegalArgumentException: a rule the Heartbeat constructor checks
        }
    }

    private static final List<String> TOP = List.of("v", "nodeId", "instance", "seq", "url", "state", "weight",
            "intervalMs", "capacity", "sentAt", "backend", "models", "load", "gpus", "modelInfo", "loaded");
    private static final List<String> LOAD = List.of("inFlight", "queued", "kvCacheUsage", "prefixCacheHitRate",
            "prefillTps");
    private static final List<String> GPU = List.of("name", "utilization", "memoryUsedMiB", "memoryTotalMiB");
    private static final List<String> MODEL_INFO = List.of("name", "size", "digest", "modifiedAt", "details", "prefill");
    private static final List<String> DETAILS = List.of("parentModel", "format", "family", "families", "parameterSize",
            "quantizationLevel");
    private static final List<String> LOADED = List.of("name", "size", "sizeVram", "expiresAt", "contextLength");

    /** Reads one field's value, given its index in the object's list of names (no state: one instance each). */
    private interface FieldReader {
        Object read(JsonParser p, int index, JsonToken value) throws IOException;
    }

    /**
     * Reads the object whose start token was just read: each field once, by its index in
     * {@code names}, into an array by that index; JSON null stays {@code null}, as absent. A field
     * {@code names} lacks is skipped, as the tree reader skips it, when its value is a number, a
     * string, a boolean or null (each such name once: a repeat declines); an object or an array
     * under such a name declines, so that the tree reader looks inside it for repeated names.
     */
    private static Object[] object(JsonParser p, JsonToken start, List<String> names, FieldReader reader)
            throws IOException {
        expect(start, JsonToken.START_OBJECT);
        Object[] values = new Object[names.size()];
        int seen = 0;
        List<String> unknown = null;
        for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
            String name = p.currentName();
            int index = names.indexOf(name); // the parser interns names: equals meets the same instance
            JsonToken value = p.nextToken();
            if (index < 0) { // a field the contract does not name: a newer agent's, say
                if (value.isStructStart() || unknown != null && unknown.contains(name)) {
                    throw DECLINE;
                }
                unknown = unknown == null ? new ArrayList<>(2) : unknown;
                unknown.add(name);
                continue;
            }
            if ((seen & 1 << index) != 0) {
                throw DECLINE; // repeated: the tree reader refuses it
            }
            seen |= 1 << index;
            if (value != JsonToken.VALUE_NULL) {
                values[index] = reader.read(p, index, value);
            }
        }
        return values;
    }

    private static Heartbeat root(JsonParser p) throws IOException {
        Object[] f = object(p, p.nextToken(), TOP, (q, i, v) -> switch (i) {
            case 0 -> positiveLong(q, v);
            case 3 -> longValue(q, v);
            case 5 -> state(text(q, v));
            case 6, 7, 8 -> intValue(q, v);
            case 11 -> models(q, v);
            case 12 -> load(q, v);
            case 13 -> list(q, v, HeartbeatRules.MAX_GPUS, StreamingReader::gpu);
            case 14 -> list(q, v, HeartbeatRules.MAX_MODELS, StreamingReader::modelInfo);
            case 15 -> list(q, v, HeartbeatRules.MAX_LOADED, StreamingReader::loaded);
            default -> text(q, v);
        });
        if (f[0] == null || f[1] == null || f[4] == null || f[5] == null || f[7] == null) {
            throw DECLINE; // a required field missing: the tree reader names it
        }
        Instant sentAt = f[9] == null ? null : Instants.parse((String) f[9]);
        return new Heartbeat((String) f[1], (String) f[2], (Long) f[3], (String) f[4], (NodeState) f[5],
                f[6] == null ? 1 : (Integer) f[6], (Integer) f[7], sentAt, (String) f[10], cast(f[11]),
                f[12] == null ? Load.UNKNOWN : (Load) f[12], cast(f[13]), cast(f[14]), cast(f[15]), (Integer) f[8]);
    }

    @SuppressWarnings("unchecked")
    private static <T> List<T> cast(Object list) {
        return list == null ? List.of() : (List<T>) list;
    }

    private static List<String> models(JsonParser p, JsonToken value) throws IOException {
        expect(value, JsonToken.START_ARRAY);
        List<String> models = new ArrayList<>(4);
        int count = 0;
        for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
            String model = text(p, t);
            if (++count > HeartbeatRules.MAX_MODELS) {
                throw DECLINE;
            }
            if (!models.contains(model)) { // the first of each, as the tree reader keeps
                models.add(model);
            }
        }
        return models;
    }

    private static Load load(JsonParser p, JsonToken value) throws IOException {
        Object[] f = object(p, value, LOAD, (q, i, v) -> i < 2 ? (Object) intValue(q, v) : (Object) number(q, v));
        return new Load((Integer) f[0], (Integer) f[1], (Double) f[2], (Double) f[3], (Double) f[4]);
    }

    /** Reads one item of a list, given its first token. */
    private interface ItemReader<T> {
        T read(JsonParser p, JsonToken first) throws IOException;
    }

    /** Reads an array of at most {@code max} items; more declines (the tree reader names the limit). */
    private static <T> List<T> list(JsonParser p, JsonToken value, int max, ItemReader<T> item) throws IOException {
        expect(value, JsonToken.START_ARRAY);
        List<T> out = new ArrayList<>(4);
        for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
            if (out.size() == max) {
                throw DECLINE;
            }
            out.add(item.read(p, t));
        }
        return out;
    }

    private static Gpu gpu(JsonParser p, JsonToken first) throws IOException {
        Object[] f = object(p, first, GPU, (q, i, v) -> switch (i) {
            case 0 -> text(q, v);
            case 1 -> number(q, v);
            default -> longValue(q, v);
        });
        return new Gpu((String) f[0], (Double) f[1], (Long) f[2], (Long) f[3]);
    }

    private static ModelInfo modelInfo(JsonParser p, JsonToken first) throws IOException {
        Object[] f = object(p, first, MODEL_INFO, (q, i, v) -> switch (i) {
            case 1 -> longValue(q, v);
            case 4 -> details(q, v);
            case 5 -> bool(v);
            default -> text(q, v);
        });
        return new ModelInfo((String) f[0], (Long) f[1], (String) f[2], (String) f[3], (ModelInfo.Details) f[4],
                (Boolean) f[5]);
    }

    private static ModelInfo.Details details(JsonParser p, JsonToken value) throws IOException {
        Object[] f = object(p, value, DETAILS, (q, i, v) -> i == 3
                ? list(q, v, HeartbeatRules.MAX_FAMILIES, StreamingReader::text) : text(q, v));
        return new ModelInfo.Details((String) f[0], (String) f[1], (String) f[2], cast(f[3]), (String) f[4],
                (String) f[5]);
    }

    private static LoadedModel loaded(JsonParser p, JsonToken first) throws IOException {
        Object[] f = object(p, first, LOADED, (q, i, v) -> switch (i) {
            case 1, 2 -> longValue(q, v);
            case 4 -> intValue(q, v);
            default -> text(q, v);
        });
        return new LoadedModel((String) f[0], (Long) f[1], (Long) f[2], (String) f[3], (Integer) f[4]);
    }

    private static void expect(JsonToken actual, JsonToken wanted) {
        if (actual != wanted) {
            throw DECLINE;
        }
    }

    private static String text(JsonParser p, JsonToken value) throws IOException {
        expect(value, JsonToken.VALUE_STRING);
        return p.getText();
    }

    private static NodeState state(String text) {
        for (NodeState s : NodeState.values()) {
            if (s.name().equals(text)) {
                return s;
            }
        }
        throw DECLINE;
    }

    private static int intValue(JsonParser p, JsonToken value) throws IOException {
        if (value != JsonToken.VALUE_NUMBER_INT || p.getNumberType() != JsonParser.NumberType.INT) {
            throw DECLINE;
        }
        return p.getIntValue();
    }

    private static long longValue(JsonParser p, JsonToken value) throws IOException {
        if (value != JsonToken.VALUE_NUMBER_INT || p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
            throw DECLINE;
        }
        return p.getLongValue();
    }

    private static long positiveLong(JsonParser p, JsonToken value) throws IOException {
        long v = longValue(p, value);
        if (v <= 0) {
            throw DECLINE;
        }
        return v;
    }

    /** Any JSON number, as the tree reader's {@code doubleValue}; a big integer declines. */
    private static double number(JsonParser p, JsonToken value) throws IOException {
        if (value == JsonToken.VALUE_NUMBER_FLOAT
                || value == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
            return p.getDoubleValue();
        }
        throw DECLINE;
    }

    private static Boolean bool(JsonToken value) {
        if (value == JsonToken.VALUE_TRUE) {
            return Boolean.TRUE;
        }
        if (value == JsonToken.VALUE_FALSE) {
            return Boolean.FALSE;
        }
        throw DECLINE;
    }
}
