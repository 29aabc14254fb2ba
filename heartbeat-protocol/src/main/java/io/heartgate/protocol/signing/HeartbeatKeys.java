package io.heartgate.protocol.signing;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Holds the keys of a heartbeat keys file ({@code --heartbeat-keys}, env {@code HEARTBEAT_KEYS_FILE}),
 * in file order. The agent signs with the {@link #first()} key; the scheduler accepts a record signed
 * by any of them, so during a rotation both the old and the new key are listed. Immutable and
 * thread-safe.
 *
 * <p>The file holds one key a line, {@code KEY_ID SECRET [NODE_ID_GLOB]}, fields separated by spaces
 * or tabs:
 * <pre>
 * # KEY_ID   SECRET (openssl rand -hex 32)                                     NODE_ID_GLOB
 * 2026-06    5c0f3e0d9b7a4c21e8f6a3b2d1c0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2   gpu-*
 * 2026-01    0e1d2c3b4a5968778695a4b3c2d1e0f00f1e2d3c4b5a69788796a5b4c3d2e1f0
 * </pre>
 * <ul>
 *   <li>KEY_ID: 1 to {@value #MAX_KEY_ID_LENGTH} of {@code A-Za-z0-9._-}, unique in the file; sent in
 *       clear with every record.</li>
 *   <li>SECRET: at least {@value #MIN_SECRET_LENGTH} characters without whitespace, used as its UTF-8
 *       bytes (not hex-decoded); generate one with {@code openssl rand -hex 32}.</li>
 *   <li>NODE_ID_GLOB, optional: the node ids the key may speak for, node-id characters and {@code *}
 *       for any run of them ({@code gpu-*}, {@code rack1-*-a}, {@code gpu-a}); absent means any node.</li>
 * </ul>
 * Blank lines and lines starting with {@code #} are ignored, and so is the rest of a line from a field
 * after the secret that starts with {@code #}. Errors name the line and never quote a secret.
 */
public final class HeartbeatKeys {

    /** The setting named by the errors of this class, {@code --heartbeat-keys} on the command line. */
    public static final String SETTING = "heartbeatKeys";
    /** Longest key id. */
    public static final int MAX_KEY_ID_LENGTH = 64;
    /** Fewest characters of a secret: 32, the 128 bits of {@code openssl rand -hex 16}, half what we advise. */
    public static final int MIN_SECRET_LENGTH = 32;

    private final List<HeartbeatKey> keys;
    /** Open-addressing table of {@link #keys} by key-id bytes, so a lookup decodes and allocates nothing. */
    private final HeartbeatKey[] byId;

    HeartbeatKeys(List<HeartbeatKey> keys) {
        this.keys = List.copyOf(keys);
        this.byId = new HeartbeatKey[Integer.highestOneBit(Math.max(1, keys.size()) * 2) * 2];
        for (HeartbeatKey key : this.keys) {
            int slot = slot(key.idBytes());
            while (byId[slot] != null) {
                slot = (slot + 1) & (byId.length - 1);
            }
            byId[slot] = key;
        }
    }

    /**
     * Parses the text of a keys file.
     *
     * @throws InvalidSettingException for {@value #SETTING}, "line N: what is wrong", for a malformed
     *     line, a duplicate key id or a file without keys
     */
    public static HeartbeatKeys parse(String text) {
        return new HeartbeatKeys(KeyFile.parse(text));
    }

    /**
     * Reads and parses a keys file (UTF-8).
     *
     * @throws InvalidSettingException for {@value #SETTING}: "cannot read FILE: why", or as {@link #parse}
     */
    public static HeartbeatKeys load(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": no such file");
        } catch (AccessDeniedException e) {
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": permission denied");
        } catch (CharacterCodingException e) {
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": not UTF-8 text");
        } catch (IOException e) {
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": " + e.getMessage());
        }
        return parse(text);
    }

    /** Returns the signing key: the first of the file. */
    public HeartbeatKey first() {
        return keys.get(0);
    }

    /** Returns every key in file order; never empty. */
    public List<HeartbeatKey> keys() {
        return keys;
    }

    /** Returns the key with this id, or empty when there is none (also for {@code null}). */
    public Optional<HeartbeatKey> find(String keyId) {
        return keys.stream().filter(k -> k.id().equals(keyId)).findFirst();
    }

    /** Returns the key whose id has these ASCII bytes, or {@code null}; allocates nothing. */
    HeartbeatKey find(byte[] keyId) {
        if (keyId.length == 0 || keyId.length > MAX_KEY_ID_LENGTH) {
            return null;
        }
        for (int slot = slot(keyId); byId[slot] != null; slot = (slot + 1) & (byId.length - 1)) {
            if (Arrays.equals(byId[slot].idBytes(), keyId)) {
                return byId[slot];
            }
        }
        return null;
    }

    /** Returns how many keys there are; at least 1. */
    public int size() {
        return keys.size();
    }

    /** Returns the key ids and globs, such as {@code [2026-06 (nodes gpu-*), 2026-01 (any node)]}; never a secret. */
    @Override
    public String toString() {
        return keys.stream().map(HeartbeatKey::toString).collect(Collectors.joining(", ", "[", "]"));
    }

    private int slot(byte[] keyId) {
        int h = Arrays.hashCode(keyId);
        return (h ^ (h >>> 16)) & (byId.length - 1);
    }
}
