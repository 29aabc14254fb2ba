package io.heartgate.protocol.signing;

/**
 * Matches node ids against a pattern of node-id characters ({@code A-Za-z0-9._:-}) in which
 * {@code *} stands for any run of node-id characters, the empty run included: {@code gpu-*}
 * matches {@code gpu-} and {@code gpu-a1}, {@code rack1-*-a} matches {@code rack1-x-a}, a pattern
 * without {@code *} matches only itself. Case-sensitive, like node ids. Immutable and thread-safe.
 *
 * <p>Matches on bytes, so the verifier can test a record key without decoding it into a string;
 * node-id characters are ASCII, so a UTF-8 byte at or above 0x80 never matches.
 */
final class NodeIdGlob {

    private final String pattern;
    private final byte[] bytes;

    private NodeIdGlob(String pattern) {
        this.pattern = pattern;
        this.bytes = new byte[pattern.length()];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) pattern.charAt(i);
        }
    }

    /** Returns the glob for {@code pattern}, or {@code null} when it has a character other than node-id characters and {@code *}. */
    static NodeIdGlob parse(String pattern) {
        if (pattern.isEmpty()) {
            return null;
        }
        for (int i = 0; i < pattern.length(); i++) {
            char c = pattern.charAt(i);
            if (c != '*' && !isNodeIdChar(c)) {
                return null;
            }
        }
        return new NodeIdGlob(pattern);
    }

    /** Returns whether the node id whose UTF-8 bytes these are matches; {@code null} never does. */
    boolean matches(byte[] nodeId) {
        if (nodeId == null) {
            return false;
        }
        // Greedy match with one backtrack point (the last star seen): linear for one star, at most
        // length times pattern length otherwise, which for 128-character ids stays trivial.
        int p = 0;
        int t = 0;
        int star = -1;
        int resume = 0;
        while (t < nodeId.length) {
            byte c = nodeId[t];
            if (!isNodeIdChar(c)) {
                return false;
            }
            if (p < bytes.length && bytes[p] == '*') {
                star = p++;
                resume = t;
            } else if (p < bytes.length && bytes[p] == c) {
                p++;
                t++;
            } else if (star >= 0) {
                p = star + 1;
                t = ++resume;
            } else {
                return false;
            }
        }
        while (p < bytes.length && bytes[p] == '*') {
            p++;
        }
        return p == bytes.length;
    }

    /** Returns the pattern as written. */
    @Override
    public String toString() {
        return pattern;
    }

    private static boolean isNodeIdChar(int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || c == '.' || c == '_' || c == ':' || c == '-';
    }
}
