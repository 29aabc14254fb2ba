package io.heartgate.protocol;

import static io.heartgate.protocol.StrictFields.describe;
import static io.heartgate.protocol.StrictFields.optionalBoolean;
import static io.heartgate.protocol.StrictFields.optionalInt;
import static io.heartgate.protocol.StrictFields.optionalLong;
import static io.heartgate.protocol.StrictFields.optionalText;
import static io.heartgate.protocol.StrictFields.present;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import io.heartgate.protocol.StrictFields.Reject;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes and reads the heartbeat's catalogue fields, {@code modelInfo} and {@code loaded}, for
 * {@link HeartbeatCodec}: the same strict typing as the rest of the message, each bad value a
 * rejection naming its field; the limits are {@link HeartbeatRules#checkCatalogue}'s.
 *
 * <p>A model's {@code prefill} is written only when known, so a heartbeat that knows nothing of it is
 * byte for byte what agents sent before it existed; decoders that predate it skip it as they skip
 * every field they do not read.
 */
final class CatalogueFields {

    private CatalogueFields() {
    }

    static void write(JsonGenerator g, Heartbeat hb) throws IOException {
        if (!hb.modelInfo().isEmpty()) {
            g.writeArrayFieldStart("modelInfo");
            for (ModelInfo m : hb.modelInfo()) {
                g.writeStartObject();
                g.writeStringField("name", m.name());
                if (m.size() != null) {
                    g.writeNumberField("size", m.size());
                }
                optionalString(g, "digest", m.digest());
                optionalString(g, "modifiedAt", m.modifiedAt());
                ModelInfo.Details d = m.details();
                if (d != null) {
                    g.writeObjectFieldStart("details");
                    optionalString(g, "parentModel", d.parentModel());
                    optionalString(g, "format", d.format());
                    optionalString(g, "family", d.family());
                    if (!d.families().isEmpty()) {
                        g.writeArrayFieldStart("families");
                        for (String f : d.families()) {
                            g.writeString(f);
                        }
                        g.writeEndArray();
                    }
                    optionalString(g, "parameterSize", d.parameterSize());
                    optionalString(g, "quantizationLevel", d.quantizationLevel());
                    g.writeEndObject();
                }
                if (m.prefill() != null) {
                    g.writeBooleanField("prefill", m.prefill());
                }
                g.writeEndObject();
            }
            g.writeEndArray();
        }
        if (!hb.loaded().isEmpty()) {
            g.writeArrayFieldStart("loaded");
            for (LoadedModel m : hb.loaded()) {
                g.writeStartObject();
                g.writeStringField("name", m.name());
                if (m.size() != null) {
                    g.writeNumberField("size", m.size());
                }
                if (m.sizeVram() != null) {
                    g.writeNumberField("sizeVram", m.sizeVram());
                }
                optionalString(g, "expiresAt", m.expiresAt());
                if (m.contextLength() != null) {
                    g.writeNumberField("contextLength", m.contextLength());
                }
                g.writeEndObject();
            }
            g.writeEndArray();
        }
    }

    private static void optionalString(JsonGenerator g, String field, String value) throws IOException {
        if (value != null) {
            g.writeStringField(field, value);
        }
    }

    static List<ModelInfo> readModelInfo(JsonNode node) {
        if (node == null) {
            return List.of();
        }
        if (!node.isArray()) {
            throw new Reject(Rule.WRONG_TYPE, "modelInfo", "must be an array of objects, got " + describe(node));
        }
        if (node.size() > HeartbeatRules.MAX_MODELS) {
            throw new Reject(Rule.TOO_MANY_ITEMS, "modelInfo",
                    "at most " + HeartbeatRules.MAX_MODELS + " models, was " + node.size());
        }
        List<ModelInfo> out = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            JsonNode m = node.get(i);
            String field = "modelInfo[" + i + "]";
            if (!m.isObject()) {
                throw new Reject(Rule.WRONG_TYPE, field, "must be an object, got " + describe(m));
            }
            JsonNode d = present(m, "details");
            ModelInfo.Details details = null;
            if (d != null) {
                if (!d.isObject()) {
                    throw new Reject(Rule.WRONG_TYPE, field + ".details", "must be an object, got " + describe(d));
                }
                details = new ModelInfo.Details(optionalText(d, "parentModel", field + ".details.parentModel"),
                        optionalText(d, "format", field + ".details.format"),
                        optionalText(d, "family", field + ".details.family"),
                        readStrings(present(d, "families"), field + ".details.families"),
                        optionalText(d, "parameterSize", field + ".details.parameterSize"),
                        optionalText(d, "quantizationLevel", field + ".details.quantizationLevel"));
            }
            out.add(new ModelInfo(optionalText(m, "name", field + ".name"), optionalLong(m, "size", field + ".size"),
                    optionalText(m, "digest", field + ".digest"), optionalText(m, "modifiedAt", field + ".modifiedAt"),
                    details, optionalBoolean(m, "prefill", field + ".prefill")));
        }
        return out;
    }

    private static List<String> readStrings(JsonNode node, String field) {
        if (node == null) {
            return List.of();
        }
        if (!node.isArray()) {
            throw new Reject(Rule.WRONG_TYPE, field, "must be an array of strings, got " + describe(node));
        }
        if (node.size() > HeartbeatRules.MAX_FAMILIES) {
            throw new Reject(Rule.TOO_MANY_ITEMS, field, "at most " + HeartbeatRules.MAX_FAMILIES + ", was " + node.size());
        }
        List<String> out = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            if (!node.get(i).isTextual()) {
                throw new Reject(Rule.WRONG_TYPE, field + "[" + i + "]", "must be a string, got " + describe(node.get(i)));
            }
            out.add(node.get(i).textValue());
        }
        return out;
    }

    static List<LoadedModel> readLoaded(JsonNode node) {
        if (node == null) {
            return List.of();
        }
        if (!node.isArray()) {
            throw new Reject(Rule.WRONG_TYPE, "loaded", "must be an array of objects, got " + describe(node));
        }
        if (node.size() > HeartbeatRules.MAX_LOADED) {
            throw new Reject(Rule.TOO_MANY_ITEMS, "loaded",
                    "at most " + HeartbeatRules.MAX_LOADED + " models, was " + node.size());
        }
        List<LoadedModel> out = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            JsonNode m = node.get(i);
            String field = "loaded[" + i + "]";
            if (!m.isObject()) {
                throw new Reject(Rule.WRONG_TYPE, field, "must be an object, got " + describe(m));
            }
            out.add(new LoadedModel(optionalText(m, "name", field + ".name"), optionalLong(m, "size", field + ".size"),
                    optionalLong(m, "sizeVram", field + ".sizeVram"), optionalText(m, "expiresAt", field + ".expiresAt"),
                    optionalInt(m, "contextLength", field + ".contextLength")));
        }
        return out;
    }
}
