package io.heartgate.protocol.signing;

import io.heartgate.protocol.Rejection;
import io.heartgate.protocol.Rule;

/**
 * Holds the outcome of checking one record's signature: verified under a named key, or refused
 * with the rule it broke. Checking never throws, so a consumer loop tests which of the two it got.
 * The verifier hands out shared instances, so a result costs no allocation.
 */
public sealed interface Verification permits Verification.Verified, Verification.Refused {

    /** Returns whether the record is signed by a configured key that may speak for its node id. */
    boolean isVerified();

    /**
     * A record signed by a configured key that may speak for its node id.
     *
     * @param keyId the id of the key that signed it
     */
    record Verified(String keyId) implements Verification {

        @Override
        public boolean isVerified() {
            return true;
        }
    }

    /**
     * A record that must be dropped.
     *
     * @param rejection the broken rule ({@link Rule#UNSIGNED}, {@link Rule#UNKNOWN_KEY},
     *     {@link Rule#BAD_SIGNATURE} or {@link Rule#KEY_NOT_ALLOWED}) with a detail for logs that
     *     holds no secret and no attacker-chosen text
     */
    record Refused(Rejection rejection) implements Verification {

        @Override
        public boolean isVerified() {
            return false;
        }

        /** Returns the broken rule. */
        public Rule rule() {
            return rejection.rule();
        }
    }
}
