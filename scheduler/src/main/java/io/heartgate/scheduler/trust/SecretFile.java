package io.heartgate.scheduler.trust;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads a secret that a file holds alone (a token, a key): from a file, so that it never shows in a
 * process list or an environment dump; Kubernetes and Docker secrets are files too.
 */
public final class SecretFile {

    private SecretFile() {
    }

    /**
     * Returns the file's content without surrounding white space.
     *
     * @param setting the setting named when the file will not do
     * @param minLength the fewest characters accepted
     * @throws InvalidSettingException when the file cannot be read, is shorter than {@code minLength},
     *     or holds more than one printable-ASCII token; the message never shows the content
     */
    public static String read(Path file, String setting, int minLength) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException | RuntimeException e) {
            throw new InvalidSettingException(setting, "cannot read " + file + ": " + e);
        }
        if (text.isEmpty()) {
            throw new InvalidSettingException(setting, file + " is empty");
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c <= ' ' || c >= 0x7f) {
                throw new InvalidSettingException(setting, file
                        + " must hold one secret: printable ASCII without spaces, on one line");
            }
        }
        if (text.length() < minLength) {
            throw new InvalidSettingException(setting, file + " must hold at least " + minLength + " characters");
        }
        return text;
    }
}
