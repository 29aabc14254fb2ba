package io.heartgate.sim;

import io.heartgate.protocol.InvalidSettingException;
import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * Holds the faults the simulator injects, set by flag at start and by {@code POST /sim/faults} at run
 * time. Immutable; the server swaps the whole value.
 *
 * @param failHealth health checks answer 503
 * @param errorStatus when not 0, inference requests answer this status (429, 500 or 503) at once
 * @param hang inference requests never get a first byte (until the client gives up)
 * @param dropAfterTokens when 0 or more, the connection is cut after this many tokens
 * @param tokenDelayMs when not {@code null}, replaces the configured delay per token
 * @param firstTokenDelayMs when not {@code null}, replaces the configured delay before the first token
 */
public record Faults(boolean failHealth, int errorStatus, boolean hang, int dropAfterTokens,
                     Long tokenDelayMs, Long firstTokenDelayMs) {

    private static final Set<String> FIELDS = Set.of(
            "failHealth", "errorStatus", "hang", "dropAfterTokens", "tokenDelayMs", "firstTokenDelayMs");
    private static final Set<Integer> ERROR_STATUSES = Set.of(0, 429, 500, 502, 503);

    /** No fault at all. Declared after the sets its constructor reads. */
    public static final Faults NONE = new Faults(false, 0, false, -1, null, null);

    /** Checks ranges. */
    public Faults {
        if (!ERROR_STATUSES.contains(errorStatus)) {
            throw new InvalidSettingException("errorStatus", "must be 0, 429, 500, 502 or 503, was " + errorStatus);
        }
        if (dropAfterTokens < -1) {
            throw new InvalidSettingException("dropAfterTokens", "must be -1 (off) or more, was " + dropAfterTokens);
        }
        if (tokenDelayMs != null && (tokenDelayMs < 0 || tokenDelayMs > 600_000)) {
            throw new InvalidSettingException("tokenDelayMs", "must be 0 to 600000, was " + tokenDelayMs);
        }
        if (firstTokenDelayMs != null && (firstTokenDelayMs < 0 || firstTokenDelayMs > 600_000)) {
            throw new InvalidSettingException("firstTokenDelayMs", "must be 0 to 600000, was " + firstTokenDelayMs);
        }
    }

    /**
     * Returns these faults with the fields present in {@code patch} replaced; a JSON {@code null}
     * turns that fault off.
     *
     * @throws IllegalArgumentException for an unknown field, a wrong type or a value out of range
     */
    public Faults merge(JsonObject patch) {
        for (String key : patch.fieldNames()) {
            if (!FIELDS.contains(key)) {
                throw new IllegalArgumentException("unknown fault '" + key + "'; known: " + FIELDS);
            }
        }
        try {
            return new Faults(
                    patch.containsKey("failHealth") ? bool(patch, "failHealth") : failHealth,
                    patch.containsKey("errorStatus") ? intOr(patch, "errorStatus", 0) : errorStatus,
                    patch.containsKey("hang") ? bool(patch, "hang") : hang,
                    patch.containsKey("dropAfterTokens") ? intOr(patch, "dropAfterTokens", -1) : dropAfterTokens,
                    patch.containsKey("tokenDelayMs") ? patch.getLong("tokenDelayMs") : tokenDelayMs,
                    patch.containsKey("firstTokenDelayMs") ? patch.getLong("firstTokenDelayMs") : firstTokenDelayMs);
        } catch (ClassCastException e) {
            throw new IllegalArgumentException("wrong type in faults: " + e.getMessage());
        }
    }

    private static boolean bool(JsonObject o, String key) {
        Boolean b = o.getBoolean(key);
        return b != null && b;
    }

    private static int intOr(JsonObject o, String key, int absent) {
        Integer i = o.getInteger(key);
        return i == null ? absent : i;
    }

    /** Returns the faults as JSON, the shape {@code POST /sim/faults} accepts. */
    public JsonObject toJson() {
        return new JsonObject()
                .put("failHealth", failHealth)
                .put("errorStatus", errorStatus)
                .put("hang", hang)
                .put("dropAfterTokens", dropAfterTokens)
                .put("tokenDelayMs", tokenDelayMs)
                .put("firstTokenDelayMs", firstTokenDelayMs);
    }
}
