package io.heartgate.protocol.signing;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.List;
import javax.crypto.Mac;

/**
 * Computes the signature of a record under one of a key set's keys, as lower-case hex. Thread-safe
 * without locks: {@link Mac} is not, so each thread keeps its own instances, one a key, made on its
 * first use of that key, together with the buffers a computation needs, so that a computation
 * allocates only the 32-byte array the JDK's {@link Mac#doFinal()} returns.
 *
 * <p>The MAC input is the layout {@link HeartbeatSigner} describes; a change to it must raise
 * {@code LAYOUT_VERSION}, so that inputs of the two layouts never coincide.
 */
final class MacEngine {

    static final String ALGORITHM = "HmacSHA256";
    /** Length of an HMAC-SHA256 in bytes. */
    static final int MAC_BYTES = 32;
    /** Length of its lower-case hex form, the signature header's value. */
    static final int HEX_BYTES = 2 * MAC_BYTES;

    private static final byte LAYOUT_VERSION = 1;
    private static final int NULL_LENGTH = -1;
    private static final byte[] HEX_DIGITS = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private final List<HeartbeatKey> keys;
    private final ThreadLocal<Scratch> scratch;

    /** Creates an engine for these keys; fails at once if this JVM has no HmacSHA256, which every JDK must have. */
    MacEngine(List<HeartbeatKey> keys) {
        this.keys = List.copyOf(keys);
        this.scratch = ThreadLocal.withInitial(() -> new Scratch(this.keys.size()));
        newMac(this.keys.get(0));
    }

    /**
     * Computes the hex signature of a record under {@code key} into this thread's buffer and returns
     * that buffer, which stays valid until this thread's next call.
     */
    byte[] hexSignature(HeartbeatKey key, byte[] recordKey, byte[] value) {
        return hexSignature(key, recordKey, value, null);
    }

    /**
     * As {@link #hexSignature(HeartbeatKey, byte[], byte[])}, with a tombstone's own field (its
     * instance and time) appended after the null value when {@code tombstone} is given.
     */
    byte[] hexSignature(HeartbeatKey key, byte[] recordKey, byte[] value, byte[] tombstone) {
        Scratch s = scratch.get();
        Mac mac = s.macs[key.index()];
        if (mac == null) {
            mac = newMac(key);
            s.macs[key.index()] = mac;
        }
        mac.update(LAYOUT_VERSION);
        s.update(mac, key.idBytes());
        s.update(mac, recordKey);
        s.update(mac, value);
        if (value == null && tombstone != null) {
            s.update(mac, tombstone);
        }
        // The JDK's doFinal(byte[], int) allocates the MAC anyway, so take the array it makes.
        byte[] digest = mac.doFinal();
        for (int i = 0; i < MAC_BYTES; i++) {
            s.hex[2 * i] = HEX_DIGITS[(digest[i] >> 4) & 0xf];
            s.hex[2 * i + 1] = HEX_DIGITS[digest[i] & 0xf];
        }
        return s.hex;
    }

    private static Mac newMac(HeartbeatKey key) {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key.secret());
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(ALGORITHM + " is not available in this JVM", e);
        }
    }

    /** One thread's MAC instances (indexed by {@link HeartbeatKey#index()}) and buffers. */
    private static final class Scratch {
        final Mac[] macs;
        final byte[] length = new byte[4];
        final byte[] hex = new byte[HEX_BYTES];

        Scratch(int keys) {
            macs = new Mac[keys];
        }

        /** Feeds a length-prefixed field, or length -1 alone for {@code null}. */
        void update(Mac m, byte[] field) {
            int n = field == null ? NULL_LENGTH : field.length;
            length[0] = (byte) (n >>> 24);
            length[1] = (byte) (n >>> 16);
            length[2] = (byte) (n >>> 8);
            length[3] = (byte) n;
            m.update(length, 0, 4);
            if (field != null) {
                m.update(field, 0, field.length);
            }
        }
    }
}
