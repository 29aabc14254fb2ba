package io.heartgate.loadgen;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads callers' API keys and names them safely: a report shows a key's label (its first six
 * characters and an ellipsis, fewer for short keys), never the key. Pure and thread-safe.
 */
public final class Keys {

    private static final int SHOWN = 6;

    private Keys() {
    }

    /**
     * Returns the keys of a file, one a line; blank lines and lines starting with {@code #} are skipped.
     *
     * @throws InvalidSettingException for setting {@code keysFile} when the file cannot be read
     */
    public static List<String> read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new InvalidSettingException("keysFile", "cannot read " + file + ": no such file");
        } catch (IOException e) {
            throw new InvalidSettingException("keysFile", "cannot read " + file + ": " + e.getMessage());
        }
        List<String> keys = new ArrayList<>();
        for (String line : lines) {
            String key = line.strip();
            if (!key.isEmpty() && !key.startsWith("#")) {
                keys.add(key);
            }
        }
        return keys;
    }

    /**
     * Returns one label per key, in order: {@code sk-abc…} for {@code sk-abcdef123}; a key shows at
     * most its first six characters and never more than half of itself. Different keys with the same label get
     * {@code #2}, {@code #3} ... by first appearance, so a breakdown never merges two callers.
     */
    public static List<String> labels(List<String> keys) {
        Map<String, String> byKey = new HashMap<>();
        Map<String, Integer> seen = new HashMap<>();
        List<String> out = new ArrayList<>();
        for (String key : keys) {
            String label = byKey.get(key);
            if (label == null) {
                String base = key.substring(0, Math.min(SHOWN, key.length() / 2)) + "…";
                int n = seen.merge(base, 1, Integer::sum);
                label = n == 1 ? base : base + "#" + n;
                byKey.put(key, label);
            }
            out.add(label);
        }
        return out;
    }
}
