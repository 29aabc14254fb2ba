package io.heartgate.protocol.signing;

import io.heartgate.protocol.InvalidSettingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Parses the lines of a heartbeat keys file (format in {@link HeartbeatKeys}). Its messages quote
 * a field only once the line is known to be well formed, and then only the key id: a line whose
 * fields are out of place may hold a secret anywhere.
 */
final class KeyFile {

    private static final Pattern FIELD_SEPARATOR = Pattern.compile("[ \\t]+");
    private static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9._-]{1," + HeartbeatKeys.MAX_KEY_ID_LENGTH + "}");
    private static final String FORMAT = "expected KEY_ID SECRET [NODE_ID_GLOB]";

    private KeyFile() {
    }

    static List<HeartbeatKey> parse(String text) {
        List<HeartbeatKey> keys = new ArrayList<>();
        Map<String, Integer> lineOfId = new HashMap<>();
        String[] lines = text.split("\\R", -1);
        for (int n = 1; n <= lines.length; n++) {
            String line = lines[n - 1].strip();
            if (n == 1 && line.startsWith("\uFEFF")) {
                line = line.substring(1).strip();
            }
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] fields = withoutComment(FIELD_SEPARATOR.split(line));
            if (fields.length < 2) {
                throw error(n, "1 field, " + FORMAT);
            }
            if (fields.length > 3) {
                throw error(n, fields.length + " fields, " + FORMAT + " (a secret may not contain spaces)");
            }
            if (!KEY_ID.matcher(fields[0]).matches()) {
                throw error(n, "key id must be 1 to " + HeartbeatKeys.MAX_KEY_ID_LENGTH + " of A-Za-z0-9._-");
            }
            int secretLength = fields[1].codePointCount(0, fields[1].length());
            if (secretLength < HeartbeatKeys.MIN_SECRET_LENGTH) {
                throw error(n, "secret must be at least " + HeartbeatKeys.MIN_SECRET_LENGTH + " characters, was "
                        + secretLength + " (generate one with: openssl rand -hex 32)");
            }
            NodeIdGlob glob = null;
            if (fields.length == 3) {
                glob = NodeIdGlob.parse(fields[2]);
                if (glob == null) {
                    throw error(n, "node id glob may only contain A-Za-z0-9._:- and *");
                }
            }
            Integer earlier = lineOfId.putIfAbsent(fields[0], n);
            if (earlier != null) {
                throw error(n, "key id " + fields[0] + " is already defined on line " + earlier);
            }
            keys.add(new HeartbeatKey(keys.size(), fields[0], fields[1].getBytes(StandardCharsets.UTF_8), glob));
        }
        if (keys.isEmpty()) {
            throw new InvalidSettingException(HeartbeatKeys.SETTING, "has no keys (one a line: KEY_ID SECRET [NODE_ID_GLOB])");
        }
        return keys;
    }

    /** Drops the fields from the first one after the secret that starts with '#'. */
    private static String[] withoutComment(String[] fields) {
        for (int i = 2; i < fields.length; i++) {
            if (fields[i].startsWith("#")) {
                String[] kept = new String[i];
                System.arraycopy(fields, 0, kept, 0, i);
                return kept;
            }
        }
        return fields;
    }

    private static InvalidSettingException error(int line, String problem) {
        return new InvalidSettingException(HeartbeatKeys.SETTING, "line " + line + ": " + problem);
    }
}
