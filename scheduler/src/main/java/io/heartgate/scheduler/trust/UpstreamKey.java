package io.heartgate.scheduler.trust;

import io.heartgate.protocol.InvalidSettingException;
import java.nio.file.Path;

/**
 * The key the nodes themselves require ({@code --upstream-api-key FILE}: vLLM's {@code --api-key},
 * TGI's and llama.cpp's), sent to every node as {@code Authorization: Bearer}. Read once at start
 * from a file, so it never shows in a process list; {@link #toString()} never shows it either.
 */
public final class UpstreamKey {

    private final String authorization;

    private UpstreamKey(String key) {
        this.authorization = "Bearer " + key;
    }

    /**
     * Reads the key from {@code file}: its first line, without surrounding white space.
     *
     * @throws InvalidSettingException for {@code upstreamApiKey}: unreadable, empty, or not one token
     */
    public static UpstreamKey load(Path file) {
        return new UpstreamKey(SecretFile.read(file, "upstreamApiKey", 1));
    }

    /** Returns the {@code Authorization} header value for nodes. */
    public String authorization() {
        return authorization;
    }

    @Override
    public String toString() {
        return "UpstreamKey[******]";
    }
}
