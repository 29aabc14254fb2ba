package io.heartgate.protocol;

import io.heartgate.protocol.signing.HeartbeatVerifier;
import java.util.Locale;

/**
 * Names the heartbeat rule a rejected message broke. The set is closed and small, so its
 * {@link #label()} is safe to use as a metric label.
 */
public enum Rule {
    /** The message is larger than {@link HeartbeatCodec#MAX_MESSAGE_BYTES}. */
    MESSAGE_TOO_LARGE,
    /** The bytes are not one well-formed JSON document (includes duplicate keys, bad UTF-8). */
    MALFORMED_JSON,
    /** The JSON document is not an object. */
    NOT_AN_OBJECT,
    /** Something other than whitespace follows the JSON object. */
    TRAILING_DATA,
    /** A required field is absent or null. */
    MISSING_FIELD,
    /** A field has the wrong JSON type (no coercion: {@code "1"} is not 1, 2.5 is not 2). */
    WRONG_TYPE,
    /** {@code v} is below 1. */
    UNSUPPORTED_VERSION,
    /** {@code nodeId} is empty, too long or has a character outside {@code A-Za-z0-9._:-}. */
    INVALID_NODE_ID,
    /** {@code url} is not an absolute http or https URL with a host. */
    INVALID_URL,
    /** A number is outside its allowed range. */
    OUT_OF_RANGE,
    /** {@code state} is not UP, DRAINING or DOWN. */
    INVALID_STATE,
    /** More than {@link HeartbeatRules#MAX_MODELS} models, or more GPUs than allowed. */
    TOO_MANY_ITEMS,
    /** A string is longer than its limit. */
    VALUE_TOO_LONG,
    /** A string has the right type and length but not a valid value (an unparsable timestamp, an empty model). */
    INVALID_VALUE,
    /** The record's key is missing, not valid UTF-8 or not a valid node id. */
    INVALID_KEY,
    /** The record's key differs from the message's {@code nodeId}. */
    KEY_MISMATCH,
    /**
     * {@code url} is valid but outside the scheduler's upstream allow-list: a rule of the reader, not
     * of the codec, which never returns it.
     */
    URL_NOT_ALLOWED,
    /**
     * Signing keys are configured but the record lacks the key-id or the signature header: a rule of
     * the reader ({@link HeartbeatVerifier}), not of the codec.
     */
    UNSIGNED,
    /** The record's key-id header names no configured key: a rule of the reader, not of the codec. */
    UNKNOWN_KEY,
    /**
     * The record's signature does not match its key, value and key id under the named key: a rule of
     * the reader, not of the codec.
     */
    BAD_SIGNATURE,
    /**
     * The signature is good, but the key may not speak for the record's node id (outside the key's
     * node-id glob): a rule of the reader, not of the codec.
     */
    KEY_NOT_ALLOWED;

    /** Returns the lower-case name used in logs and metric labels, such as {@code invalid_url}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
