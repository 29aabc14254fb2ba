package io.heartgate.protocol.signing;

/**
 * Signs heartbeat records for the agent with the first key of its keys file. Thread-safe, without
 * locks.
 *
 * <p>A signed record carries two headers: {@value #KEY_ID_HEADER}, the key id in ASCII, and
 * {@value #SIGNATURE_HEADER}, the HMAC-SHA256 under the key's secret, as 64 lower-case hex digits in
 * ASCII (readable in {@code kcat} and the console consumer, at 32 bytes more than raw). The MAC is
 * computed over, every length a 4-byte big-endian signed integer:
 * <pre>
 * 0x01                                   layout version
 * len(keyId)  keyId (ASCII)
 * len(key)    record key bytes           len -1 and no bytes for a null key
 * len(value)  record value bytes         len -1 and no bytes for a tombstone (null value)
 * len(tomb)   tombstone header bytes     tombstones only: "INSTANCE SENT_AT_MS" ({@value #TOMBSTONE_HEADER})
 * </pre>
 * A tombstone carries a third header, {@value #TOMBSTONE_HEADER}, with the instance leaving and the
 * agent's time in epoch milliseconds; being signed, it cannot be refreshed, so a tombstone written
 * to the topic again later is recognised as a replay, and one of an earlier instance cannot remove
 * the node's current one.
 * Each field is length-prefixed, so no two different records share an input, and a tombstone
 * (length -1) differs from an empty value (length 0). The key id is inside the MAC, so a record
 * cannot be passed off as signed by another key. Headers other than these two are not signed.
 */
public final class HeartbeatSigner {

    /** Name of the Kafka record header that names the signing key. */
    public static final String KEY_ID_HEADER = "heartgate-key-id";
    /** Name of the Kafka record header that holds the signature. */
    public static final String SIGNATURE_HEADER = "heartgate-signature";
    /** Name of the signed header of a tombstone: {@code "INSTANCE SENT_AT_MS"} in ASCII. */
    public static final String TOMBSTONE_HEADER = "heartgate-tombstone";

    private final HeartbeatKey key;
    private final MacEngine engine;

    /** Creates a signer that signs with {@code keys.first()}. */
    public HeartbeatSigner(HeartbeatKeys keys) {
        this.key = keys.first();
        this.engine = new MacEngine(keys.keys());
    }

    /** Returns the id of the key this signer signs with. */
    public String keyId() {
        return key.id();
    }

    /**
     * Signs one record.
     *
     * @param recordKey the record key's bytes (the node id in UTF-8)
     * @param value the record value's bytes, or {@code null} for a tombstone, which is signed too
     * @return the two header values to send with the record
     */
    public Signature sign(byte[] recordKey, byte[] value) {
        return new Signature(key.id(), key.idBytes(), engine.hexSignature(key, recordKey, value));
    }

    /**
     * Signs a tombstone together with its {@value #TOMBSTONE_HEADER} header's bytes.
     *
     * @param tombstone {@code "INSTANCE SENT_AT_MS"} in ASCII, sent as that header
     */
    public Signature signTombstone(byte[] recordKey, byte[] tombstone) {
        return new Signature(key.id(), key.idBytes(), engine.hexSignature(key, recordKey, null, tombstone));
    }
}
