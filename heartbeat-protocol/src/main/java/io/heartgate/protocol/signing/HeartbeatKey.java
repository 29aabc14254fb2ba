package io.heartgate.protocol.signing;

import io.heartgate.protocol.Rejection;
import io.heartgate.protocol.Rule;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import javax.crypto.spec.SecretKeySpec;

/**
 * Represents one line of a heartbeat keys file: a key id, its secret and the node ids it may speak
 * for. Immutable and thread-safe. The secret never leaves this package: there is no accessor for
 * it, and {@link #toString()} shows only the id and the glob.
 */
public final class HeartbeatKey {

    private final int index;
    private final String id;
    private final byte[] idBytes;
    private final SecretKeySpec secret;
    private final NodeIdGlob glob;
    private final Verification.Verified verified;
    private final Verification.Refused notAllowed;

    HeartbeatKey(int index, String id, byte[] secret, NodeIdGlob glob) {
        this.index = index;
        this.id = id;
        this.idBytes = id.getBytes(StandardCharsets.US_ASCII);
        this.secret = new SecretKeySpec(secret, MacEngine.ALGORITHM);
        this.glob = glob;
        this.verified = new Verification.Verified(id);
        this.notAllowed = new Verification.Refused(new Rejection(Rule.KEY_NOT_ALLOWED, null,
                "key " + id + " may only sign for node ids matching " + glob));
    }

    /** Returns the key's id, as sent in the {@value HeartbeatSigner#KEY_ID_HEADER} header. */
    public String id() {
        return id;
    }

    /** Returns the node-id glob this key is limited to, or empty when it may speak for any node. */
    public Optional<String> nodeIdGlob() {
        return glob == null ? Optional.empty() : Optional.of(glob.toString());
    }

    /** Returns whether this key may speak for {@code nodeId}; {@code null} only when the key has no glob. */
    public boolean allows(String nodeId) {
        return allows(nodeId == null ? null : nodeId.getBytes(StandardCharsets.UTF_8));
    }

    /** Returns the key's position in its file, from 0; indexes per-thread MAC instances. */
    int index() {
        return index;
    }

    byte[] idBytes() {
        return idBytes;
    }

    SecretKeySpec secret() {
        return secret;
    }

    boolean allows(byte[] nodeId) {
        return glob == null || glob.matches(nodeId);
    }

    Verification.Verified verified() {
        return verified;
    }

    Verification.Refused notAllowed() {
        return notAllowed;
    }

    /** Returns the id and the glob, such as {@code k2026 (nodes gpu-*)}; never the secret. */
    @Override
    public String toString() {
        return id + (glob == null ? " (any node)" : " (nodes " + glob + ")");
    }
}
