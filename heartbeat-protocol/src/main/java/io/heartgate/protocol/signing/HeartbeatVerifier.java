package io.heartgate.protocol.signing;

import io.heartgate.protocol.Rejection;
import io.heartgate.protocol.Rule;
import java.security.MessageDigest;

/**
 * Checks the signature of heartbeat records for the scheduler against every configured key, so that
 * during a rotation records signed with the old and with the new key both pass. The record key is the
 * node id the record speaks for (the codec rejects a value whose {@code nodeId} differs from it).
 * Thread-safe without locks; a check allocates only the 32-byte MAC the JDK hands back.
 *
 * <p>The checks run in this order, and the first that fails names the rule:
 * <ol>
 *   <li>{@link Rule#UNSIGNED}: either header is missing;</li>
 *   <li>{@link Rule#UNKNOWN_KEY}: the key id names no configured key;</li>
 *   <li>{@link Rule#BAD_SIGNATURE}: the signature does not match (compared in constant time);</li>
 *   <li>{@link Rule#KEY_NOT_ALLOWED}: the key may not speak for the record key's node id.</li>
 * </ol>
 * The signature is checked before the glob, so a forger learns nothing about globs.
 */
public final class HeartbeatVerifier {

    private static final Verification.Refused UNSIGNED = refused(Rule.UNSIGNED,
            "record lacks the " + HeartbeatSigner.KEY_ID_HEADER + " or the " + HeartbeatSigner.SIGNATURE_HEADER + " header");
    private static final Verification.Refused UNSIGNED_TOMBSTONE = refused(Rule.UNSIGNED,
            "tombstone lacks the " + HeartbeatSigner.TOMBSTONE_HEADER + " header");
    private static final Verification.Refused UNKNOWN_KEY = refused(Rule.UNKNOWN_KEY,
            HeartbeatSigner.KEY_ID_HEADER + " names no configured key");
    private static final Verification.Refused BAD_SIGNATURE = refused(Rule.BAD_SIGNATURE,
            HeartbeatSigner.SIGNATURE_HEADER + " does not match the record");

    private final HeartbeatKeys keys;
    private final MacEngine engine;

    /** Creates a verifier that accepts records signed by any of {@code keys}. */
    public HeartbeatVerifier(HeartbeatKeys keys) {
        this.keys = keys;
        this.engine = new MacEngine(keys.keys());
    }

    /**
     * Checks one record's signature.
     *
     * @param recordKey the record key's bytes, the node id in UTF-8; {@code null} passes only a key without glob
     * @param value the record value's bytes, or {@code null} for a tombstone
     * @param keyIdHeader the value of the last {@value HeartbeatSigner#KEY_ID_HEADER} header, or {@code null} when absent
     * @param signatureHeader the value of the last {@value HeartbeatSigner#SIGNATURE_HEADER} header, or {@code null} when absent
     * @return a shared {@link Verification.Verified} naming the key, or a shared {@link Verification.Refused}
     */
    public Verification verify(byte[] recordKey, byte[] value, byte[] keyIdHeader, byte[] signatureHeader) {
        return verify(recordKey, value, keyIdHeader, signatureHeader, null);
    }

    /**
     * Checks one record's signature; a tombstone ({@code value} null) must carry its signed
     * {@value HeartbeatSigner#TOMBSTONE_HEADER} header, given as {@code tombstoneHeader}, else it is
     * {@link Rule#UNSIGNED}.
     */
    public Verification verify(byte[] recordKey, byte[] value, byte[] keyIdHeader, byte[] signatureHeader,
                               byte[] tombstoneHeader) {
        if (keyIdHeader == null || signatureHeader == null) {
            return UNSIGNED;
        }
        if (value == null && tombstoneHeader == null) {
            return UNSIGNED_TOMBSTONE;
        }
        HeartbeatKey key = keys.find(keyIdHeader);
        if (key == null) {
            return UNKNOWN_KEY;
        }
        if (!MessageDigest.isEqual(engine.hexSignature(key, recordKey, value, tombstoneHeader), signatureHeader)) {
            return BAD_SIGNATURE;
        }
        return key.allows(recordKey) ? key.verified() : key.notAllowed();
    }

    /** Returns the keys this verifier accepts, for a start-up log line. */
    public HeartbeatKeys keys() {
        return keys;
    }

    private static Verification.Refused refused(Rule rule, String detail) {
        return new Verification.Refused(new Rejection(rule, null, detail));
    }
}
