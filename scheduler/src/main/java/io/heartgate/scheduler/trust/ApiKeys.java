package io.heartgate.scheduler.trust;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.admission.Quota;
import io.heartgate.scheduler.table.ModelNames;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The callers allowed on the proxy port ({@code --api-keys FILE}): one key per line,
 * {@code NAME SHA256_HEX [models=MODEL,MODEL...] [priority=N] [rpm=N] [tpm=N]}, the hash being SHA-256 of the key's UTF-8 bytes in
 * lower-case hex, {@code #} starting a comment. Only hashes are stored, so the file gives no key away.
 * Attributes are {@code key=value}; an unknown one is an error rather than ignored, since a limit
 * silently dropped is worse than a scheduler that does not start.
 *
 * <p>A presented key is hashed and its digest compared with {@link MessageDigest#isEqual}, which
 * takes the same time wherever two digests differ; the keys are indexed by the digest's first eight
 * bytes, so how long a look-up takes depends only on the digest of what was sent, never on how much
 * of a real key it shares. Immutable and thread-safe.
 */
public final class ApiKeys {

    /** The attributes a key's line may carry. */
    static final Set<String> ATTRIBUTES = Set.of("models", "priority", "rpm", "tpm");
    /** The largest priority class, either way; 0 is everyone's default. */
    static final int MAX_PRIORITY = 1000;
    /** The largest requests- or tokens-per-minute limit. */
    static final long MAX_PER_MINUTE = 1_000_000_000L;

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    private static final Pattern HASH = Pattern.compile("[0-9a-f]{64}");
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    /**
     * One caller's key.
     *
     * @param name the caller's name, used in logs and metric labels (never the key)
     * @param models the normalised models the key may use; empty for any
     * @param priority its class in the gateway queue ({@code priority=N}, -1000 to 1000): a higher
     *     class is always served first; 0 by default
     * @param rpm requests per minute it may send to this scheduler ({@code rpm=N}); 0 for no limit
     * @param tpm tokens (prompt and completion) per minute it may use on this scheduler
     *     ({@code tpm=N}); 0 for no limit
     */
    public record Key(String name, Set<String> models, int priority, long rpm, long tpm) implements Quota {

        /** A key with no priority and no limits. */
        public Key(String name, Set<String> models) {
            this(name, models, 0, 0, 0);
        }

        /**
         * Returns whether this key may send a request naming {@code model} (normalised, or {@code null}
         * for none). A key limited to some models may send a request naming none only when it has no
         * body to make a node pick its default model ({@code GET}, {@code HEAD}: listings and probes).
         */
        public boolean allows(String model, String method) {
            if (models.isEmpty()) {
                return true;
            }
            if (model == null) {
                return method.equals("GET") || method.equals("HEAD");
            }
            return models.contains(model);
        }
    }

    private record Entry(byte[] digest, Key key) {
    }

    private final Map<Long, List<Entry>> byPrefix;
    private final Map<String, Key> byName;
    private final int size;

    private ApiKeys(Map<Long, List<Entry>> byPrefix, Map<String, Key> byName, int size) {
        this.byPrefix = byPrefix;
        this.byName = byName;
        this.size = size;
    }

    /** Returns the key named {@code name} (a caller already authenticated), or {@code null}. */
    public Key named(String name) {
        return byName.get(name);
    }

    /**
     * Reads the keys file at {@code file}.
     *
     * @throws InvalidSettingException for {@code apiKeys}: unreadable, or a line naming its number and fault
     */
    public static ApiKeys load(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            throw new InvalidSettingException("apiKeys", "cannot read " + file + ": " + e);
        }
        return parse(text);
    }

    /**
     * Parses the text of a keys file.
     *
     * @throws InvalidSettingException for {@code apiKeys}, naming the line and what is wrong with it
     */
    public static ApiKeys parse(String text) {
        Map<Long, List<Entry>> byPrefix = new HashMap<>();
        Map<String, Key> byName = new HashMap<>();
        Set<String> names = new HashSet<>();
        Set<String> hashes = new HashSet<>();
        String[] lines = text.split("\r?\n", -1);
        int size = 0;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            int hash = line.indexOf('#');
            if (hash >= 0) {
                line = line.substring(0, hash);
            }
            line = line.strip();
            if (line.isEmpty()) {
                continue;
            }
            Entry entry = entry(line, i + 1);
            if (!names.add(entry.key().name())) {
                throw bad(i + 1, "key name '" + entry.key().name() + "' is used twice");
            }
            if (!hashes.add(HexFormat.of().formatHex(entry.digest()))) {
                throw bad(i + 1, "the same key hash is listed twice (key '" + entry.key().name() + "')");
            }
            byPrefix.computeIfAbsent(prefix(entry.digest()), k -> new ArrayList<>(1)).add(entry);
            byName.put(entry.key().name(), entry.key());
            size++;
        }
        byPrefix.replaceAll((k, v) -> List.copyOf(v));
        return new ApiKeys(Map.copyOf(byPrefix), Map.copyOf(byName), size);
    }

    private static Entry entry(String line, int number) {
        String[] fields = line.split("\\s+");
        if (fields.length < 2) {
            throw bad(number, "expected NAME SHA256_HEX [models=MODEL,...] [priority=N] [rpm=N] [tpm=N]");
        }
        String name = fields[0];
        if (!NAME.matcher(name).matches()) {
            throw bad(number, "key name '" + name + "' must be 1 to 64 of A-Za-z0-9._-");
        }
        String hex = fields[1];
        if (!HASH.matcher(hex).matches()) {
            throw bad(number, "key '" + name + "': the hash must be 64 lower-case hex digits (SHA-256 of the key); "
                    + "'java -jar scheduler.jar keys add NAME' prints a valid line");
        }
        Set<String> models = Set.of();
        int priority = 0;
        long rpm = 0;
        long tpm = 0;
        Set<String> seen = new HashSet<>();
        for (int f = 2; f < fields.length; f++) {
            int eq = fields[f].indexOf('=');
            String attribute = eq < 0 ? fields[f] : fields[f].substring(0, eq);
            if (!ATTRIBUTES.contains(attribute) || eq < 0) {
                throw bad(number, "key '" + name + "': unknown attribute '" + fields[f] + "' (known: "
                        + String.join(", ", ATTRIBUTES.stream().map(a -> a + "=...").sorted().toList()) + ")");
            }
            if (!seen.add(attribute)) {
                throw bad(number, "key '" + name + "': " + attribute + " is given twice");
            }
            String value = fields[f].substring(eq + 1);
            switch (attribute) {
                case "models" -> models = models(value, name, number);
                case "priority" -> priority = (int) number(value, -MAX_PRIORITY, MAX_PRIORITY, attribute, name, number);
                case "rpm" -> rpm = number(value, 1, MAX_PER_MINUTE, attribute, name, number);
                default -> tpm = number(value, 1, MAX_PER_MINUTE, attribute, name, number);
            }
        }
        return new Entry(HexFormat.of().parseHex(hex), new Key(name, models, priority, rpm, tpm));
    }

    private static long number(String value, long min, long max, String attribute, String name, int line) {
        try {
            long n = Long.parseLong(value);
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw bad(line, "key '" + name + "': " + attribute + "= must be a whole number from " + min + " to " + max
                + ", was '" + value + "'");
    }

    private static Set<String> models(String list, String name, int number) {
        Set<String> models = new LinkedHashSet<>();
        for (String m : list.split(",", -1)) {
            if (m.isBlank()) {
                throw bad(number, "key '" + name + "': models= has an empty entry");
            }
            models.add(ModelNames.normalize(m));
        }
        return Set.copyOf(models);
    }

    private static InvalidSettingException bad(int line, String problem) {
        return new InvalidSettingException("apiKeys", "line " + line + ": " + problem);
    }

    /** Returns the key {@code presented} is, or {@code null} when it is none of them. */
    public Key find(String presented) {
        Scratch scratch = SCRATCH.get();
        byte[] digest = scratch.digest(presented);
        List<Entry> candidates = byPrefix.get(prefix(digest));
        if (candidates == null) {
            return null;
        }
        for (Entry e : candidates) {
            if (MessageDigest.isEqual(e.digest(), digest)) {
                return e.key();
            }
        }
        return null;
    }

    /** Per-thread buffers, so that checking a key allocates nothing on the request path. */
    private static final class Scratch {
        private final MessageDigest sha = sha256();
        private final byte[] digest = new byte[32];
        private byte[] bytes = new byte[128];

        byte[] digest(String key) {
            int n = key.length();
            if (n > bytes.length) {
                bytes = new byte[Math.max(n, bytes.length * 2)];
            }
            for (int i = 0; i < n; i++) {
                char c = key.charAt(i);
                if (c >= 0x80) { // not ASCII: the file's hashes are of UTF-8
                    sha.update(key.getBytes(StandardCharsets.UTF_8));
                    return finish();
                }
                bytes[i] = (byte) c;
            }
            sha.update(bytes, 0, n);
            return finish();
        }

        private byte[] finish() {
            try {
                sha.digest(digest, 0, digest.length);
            } catch (DigestException e) {
                throw new IllegalStateException(e); // not reached: 32 bytes is SHA-256's length
            }
            return digest;
        }
    }

    /** Returns how many keys there are. */
    public int size() {
        return size;
    }

    /** Returns the hash of {@code key} as the keys file holds it: SHA-256 of its UTF-8 bytes, lower-case hex. */
    public static String hash(String key) {
        return HexFormat.of().formatHex(sha256().digest(key.getBytes(StandardCharsets.UTF_8)));
    }

    private static long prefix(byte[] digest) {
        long p = 0;
        for (int i = 0; i < 8; i++) {
            p = (p << 8) | (digest[i] & 0xff);
        }
        return p;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256", e); // every Java SE has it
        }
    }

    @Override
    public String toString() {
        return "ApiKeys[" + size + " keys]";
    }
}
