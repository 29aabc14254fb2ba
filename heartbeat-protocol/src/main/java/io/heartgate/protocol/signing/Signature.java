package io.heartgate.protocol.signing;

import java.nio.charset.StandardCharsets;

/**
 * Holds the two header values that sign one record: the key id for
 * {@value HeartbeatSigner#KEY_ID_HEADER} and the signature for {@value HeartbeatSigner#SIGNATURE_HEADER}.
 * Immutable; its accessors return fresh arrays, which the caller may hand to a Kafka header and forget.
 */
public final class Signature {

    private final String keyId;
    private final byte[] keyIdHeader;
    private final byte[] signatureHeader;

    Signature(String keyId, byte[] keyIdHeader, byte[] signatureHeader) {
        this.keyId = keyId;
        this.keyIdHeader = keyIdHeader.clone();
        this.signatureHeader = signatureHeader.clone();
    }

    /** Returns the id of the key that signed. */
    public String keyId() {
        return keyId;
    }

    /** Returns the value of the {@value HeartbeatSigner#KEY_ID_HEADER} header: the key id in ASCII. */
    public byte[] keyIdHeader() {
        return keyIdHeader.clone();
    }

    /** Returns the value of the {@value HeartbeatSigner#SIGNATURE_HEADER} header: 64 lower-case hex digits in ASCII. */
    public byte[] signatureHeader() {
        return signatureHeader.clone();
    }

    /** Returns the key id and the signature in hex; a signature is no secret. */
    @Override
    public String toString() {
        return keyId + ":" + new String(signatureHeader, StandardCharsets.US_ASCII);
    }
}
