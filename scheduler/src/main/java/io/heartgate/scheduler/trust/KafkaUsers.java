package io.heartgate.scheduler.trust;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The SCRAM users of the embedded broker on a secured single-box install
 * ({@code --embedded-kafka-users FILE}): one per line, {@code NAME PASSWORD}, {@code #} starting a
 * comment line. Errors name the line, never a password.
 */
public final class KafkaUsers {

    private static final String SETTING = "embeddedKafkaUsers";
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    /** The shortest password accepted: the broker port may face a network. */
    static final int MIN_PASSWORD = 12;

    private KafkaUsers() {
    }

    /**
     * Reads the users of {@code file}, in file order (the first is the scheduler's own).
     *
     * @throws InvalidSettingException for {@code embeddedKafkaUsers}, naming the line and what is wrong
     */
    public static Map<String, String> load(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": " + e);
        }
        return parse(text);
    }

    /** Parses the text of a users file; see {@link #load}. */
    public static Map<String, String> parse(String text) {
        Map<String, String> users = new LinkedHashMap<>();
        String[] lines = text.split("\r?\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] fields = line.split("\\s+");
            if (fields.length != 2) {
                throw bad(i + 1, "expected NAME PASSWORD");
            }
            if (!NAME.matcher(fields[0]).matches()) {
                throw bad(i + 1, "user name must be 1 to 64 of A-Za-z0-9._-");
            }
            if (fields[0].startsWith("heartgate-")) {
                throw bad(i + 1, "user names starting with heartgate- are the broker's own");
            }
            if (fields[1].length() < MIN_PASSWORD) {
                throw bad(i + 1, "user " + fields[0] + ": the password must have at least " + MIN_PASSWORD + " characters");
            }
            if (users.put(fields[0], fields[1]) != null) {
                throw bad(i + 1, "user " + fields[0] + " is listed twice");
            }
        }
        if (users.isEmpty()) {
            throw new InvalidSettingException(SETTING, "lists no user");
        }
        return Collections.unmodifiableMap(users);
    }

    private static InvalidSettingException bad(int line, String problem) {
        return new InvalidSettingException(SETTING, "line " + line + ": " + problem);
    }
}
