package io.heartgate.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Locale;

/**
 * Reads the fields of a Jackson tree with the heartbeat's strict JSON types: no coercion ({@code "1"}
 * is not 1, 2.5 is not 2), JSON null counts as absent, and a wrong value ends the decoding with a
 * {@link Reject} naming the rule and the field. The codec's readers are built from these.
 */
final class StrictFields {

    private StrictFields() {
    }

    /** Returns the field's node, or {@code null} when it is absent or JSON null. */
    static JsonNode present(JsonNode parent, String name) {
        JsonNode n = parent.get(name);
        return n == null || n.isNull() ? null : n;
    }

    static String requiredText(JsonNode parent, String name) {
        JsonNode n = present(parent, name);
        if (n == null) {
            throw new Reject(Rule.MISSING_FIELD, name, "is required");
        }
        if (!n.isTextual()) {
            throw new Reject(Rule.WRONG_TYPE, name, "must be a string, got " + describe(n));
        }
        return n.textValue();
    }

    static String optionalText(JsonNode parent, String name, String field) {
        JsonNode n = present(parent, name);
        if (n == null) {
            return null;
        }
        if (!n.isTextual()) {
            throw new Reject(Rule.WRONG_TYPE, field, "must be a string, got " + describe(n));
        }
        return n.textValue();
    }

    static Integer optionalInt(JsonNode parent, String name, String field) {
        JsonNode n = present(parent, name);
        return n == null ? null : intValue(n, field);
    }

    static int intValue(JsonNode n, String field) {
        if (!n.isIntegralNumber()) {
            throw new Reject(Rule.WRONG_TYPE, field, "must be an integer, got " + describe(n));
        }
        if (!n.canConvertToInt()) {
            throw new Reject(Rule.OUT_OF_RANGE, field, "integer too large: " + HeartbeatRules.excerpt(n.asText()));
        }
        return n.intValue();
    }

    static Long optionalLong(JsonNode parent, String name, String field) {
        JsonNode n = present(parent, name);
        if (n == null) {
            return null;
        }
        if (!n.isIntegralNumber()) {
            throw new Reject(Rule.WRONG_TYPE, field, "must be an integer, got " + describe(n));
        }
        if (!n.canConvertToLong()) {
            throw new Reject(Rule.OUT_OF_RANGE, field, "integer too large: " + HeartbeatRules.excerpt(n.asText()));
        }
        return n.longValue();
    }

    static Double optionalDouble(JsonNode parent, String name, String field) {
        JsonNode n = present(parent, name);
        if (n == null) {
            return null;
        }
        if (!n.isNumber()) {
            throw new Reject(Rule.WRONG_TYPE, field, "must be a number, got " + describe(n));
        }
        return n.doubleValue();
    }

    static Boolean optionalBoolean(JsonNode parent, String name, String field) {
        JsonNode n = present(parent, name);
        if (n == null) {
            return null;
        }
        if (!n.isBoolean()) {
            throw new Reject(Rule.WRONG_TYPE, field, "must be true or false, got " + describe(n));
        }
        return n.booleanValue();
    }

    static String describe(JsonNode n) {
        if (n.isTextual()) {
            return "a string";
        }
        if (n.isIntegralNumber()) {
            return "an integer";
        }
        if (n.isNumber()) {
            return "a fractional number";
        }
        if (n.isBoolean()) {
            return "a boolean";
        }
        if (n.isArray()) {
            return "an array";
        }
        if (n.isObject()) {
            return "an object";
        }
        return n.getNodeType().name().toLowerCase(Locale.ROOT);
    }

    /**
     * Carries a rejection out of the nested readers. Private and stack-trace free: it is control
     * flow inside {@link HeartbeatCodec#decode}, never seen by callers.
     */
    static final class Reject extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient Rejection rejection;

        Reject(Rule rule, String field, String detail) {
            this(new Rejection(rule, field, detail));
        }

        Reject(Rejection rejection) {
            super(rejection.toString(), null, false, false);
            this.rejection = rejection;
        }

        /** Returns the rejection this carries. */
        Rejection rejection() {
            return rejection;
        }

        static void raise(Rejection rejection) {
            throw new Reject(rejection);
        }
    }
}
