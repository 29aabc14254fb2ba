package io.heartgate.protocol.cli;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Holds the Kafka client properties an operator adds to a program's own: those of a properties
 * file ({@code --kafka-config}, env {@code KAFKA_CONFIG_FILE}) with single properties overridden by
 * {@code KAFKA_}-prefixed environment variables, as the Confluent and Bitnami images do
 * ({@code KAFKA_SASL_MECHANISM} sets {@code sasl.mechanism}). This is where TLS ({@code security.protocol},
 * {@code ssl.*}, PEM keys and trust stores inline or as files) and SASL ({@code sasl.mechanism},
 * {@code sasl.jaas.config}: PLAIN, SCRAM, OAUTHBEARER) come from; the values reach the clients as they
 * are. Immutable and thread-safe. No Kafka dependency: names and values are plain strings.
 *
 * <p>What the caller keeps: the program's own settings go over these, and {@code bootstrap.servers}
 * from {@code --kafka} wins over one from here; {@code group.id} and {@code client.id} are the
 * caller's to keep or override. The (de)serializer properties are refused, here or in the
 * environment, because heartbeats are byte arrays and another (de)serializer breaks the protocol.
 *
 * <p>Secret values are never shown: {@link #masked()} and {@link #toString()} replace them with
 * {@value #MASK} (see {@link #isSecret}), and {@link #summary()} names properties without values.
 */
public final class KafkaSettings {

    /** The setting named by the errors of this class, {@code --kafka-config} on the command line. */
    public static final String SETTING = "kafkaConfig";
    /** What {@link #masked()} shows instead of a secret value. */
    public static final String MASK = "******";
    /** Prefix of the environment variables that override single properties. */
    public static final String ENV_PREFIX = "KAFKA_";
    /** Properties a file or the environment may not set, because they would break the byte protocol. */
    public static final Set<String> FORBIDDEN = Set.of(
            "key.serializer", "value.serializer", "key.deserializer", "value.deserializer");

    /** No file and no environment overrides: the clients run with the program's own settings only. */
    public static final KafkaSettings NONE = new KafkaSettings(null, Map.of(), Set.of(), Set.of());

    private final Path file;
    private final Map<String, String> properties;
    private final Set<String> fromFile;
    private final Set<String> fromEnv;

    private KafkaSettings(Path file, Map<String, String> properties, Set<String> fromFile, Set<String> fromEnv) {
        this.file = file;
        this.properties = Collections.unmodifiableMap(new TreeMap<>(properties));
        this.fromFile = Collections.unmodifiableSet(new TreeSet<>(fromFile));
        this.fromEnv = Collections.unmodifiableSet(new TreeSet<>(fromEnv));
    }

    /**
     * Reads the properties file, if any, then applies the environment's overrides: each variable
     * {@code KAFKA_X} whose property name (see {@link #propertyName}) is in {@code knownNames} and
     * whose value is not empty sets that property, over the file's value. Other variables, such as
     * {@code KAFKA_HEAP_OPTS} or {@code KAFKA_CONFIG_FILE}, are ignored, and so are empty ones,
     * which compose files pass for unset variables.
     *
     * @param file a {@link Properties} file in UTF-8, or {@code null} for none
     * @param env the environment, such as {@code System.getenv()}
     * @param knownNames the client's property names, such as {@code ProducerConfig.configNames()}
     * @throws InvalidSettingException for {@value #SETTING}: "cannot read FILE: why", or when the file
     *     or the environment sets a (de)serializer
     */
    public static KafkaSettings load(Path file, Map<String, String> env, Set<String> knownNames) {
        Map<String, String> properties = new TreeMap<>();
        if (file != null) {
            properties.putAll(read(file));
            for (String name : properties.keySet()) {
                if (FORBIDDEN.contains(name)) {
                    throw new InvalidSettingException(SETTING, file + " sets " + name + forbiddenReason());
                }
            }
        }
        Set<String> fromFile = new TreeSet<>(properties.keySet());
        Set<String> fromEnv = new TreeSet<>();
        for (Map.Entry<String, String> e : new TreeMap<>(env).entrySet()) {
            Optional<String> name = propertyName(e.getKey());
            if (name.isEmpty() || !knownNames.contains(name.get()) || e.getValue() == null || e.getValue().isEmpty()) {
                continue;
            }
            if (FORBIDDEN.contains(name.get())) {
                throw new InvalidSettingException(SETTING, "environment variable " + e.getKey() + " sets "
                        + name.get() + forbiddenReason());
            }
            properties.put(name.get(), e.getValue());
            fromEnv.add(name.get());
            fromFile.remove(name.get());
        }
        return new KafkaSettings(file, properties, fromFile, fromEnv);
    }

    /**
     * Returns the property an environment variable names, Confluent's way: strip {@code KAFKA_},
     * lower-case, then {@code ___} becomes {@code -}, {@code __} becomes {@code _} and {@code _}
     * becomes {@code .} ({@code KAFKA_SASL_MECHANISM} is {@code sasl.mechanism},
     * {@code KAFKA_A__B___C} is {@code a_b-c}); empty when the name lacks the prefix or has nothing after it.
     */
    public static Optional<String> propertyName(String envVariable) {
        if (envVariable == null || !envVariable.startsWith(ENV_PREFIX) || envVariable.length() == ENV_PREFIX.length()) {
            return Optional.empty();
        }
        String dotted = envVariable.substring(ENV_PREFIX.length()).toLowerCase(Locale.ROOT).replace('_', '.');
        return Optional.of(dotted.replace("...", "-").replace("..", "_"));
    }

    /**
     * Returns whether a property's value is a secret to keep out of logs and answers: names containing
     * {@code password}, {@code passphrase}, {@code secret} or {@code jaas} (any case), and
     * {@code ssl.keystore.key}, an inline private key. Certificates and trust stores are not secret.
     */
    public static boolean isSecret(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return n.contains("password") || n.contains("passphrase") || n.contains("secret") || n.contains("jaas")
                || n.equals("ssl.keystore.key");
    }

    /** Returns every property, for the Kafka client; unmodifiable, sorted by name. */
    public Map<String, String> properties() {
        return properties;
    }

    /** Returns every property with secret values replaced by {@value #MASK}; unmodifiable, sorted by name. */
    public Map<String, String> masked() {
        Map<String, String> masked = new TreeMap<>();
        properties.forEach((name, value) -> masked.put(name, isSecret(name) ? MASK : value));
        return Collections.unmodifiableMap(masked);
    }

    /** Returns the properties file read, or empty when there was none. */
    public Optional<Path> file() {
        return Optional.ofNullable(file);
    }

    /** Returns the names whose value comes from the file (and no variable overrode), sorted. */
    public Set<String> fromFile() {
        return fromFile;
    }

    /** Returns the names whose value comes from a {@code KAFKA_} environment variable, sorted. */
    public Set<String> fromEnv() {
        return fromEnv;
    }

    /** Returns settings of {@code properties} that the program made itself (an embedded broker's client properties). */
    public static KafkaSettings of(Map<String, String> properties) {
        for (String name : properties.keySet()) {
            if (FORBIDDEN.contains(name)) {
                throw new IllegalArgumentException(name + forbiddenReason());
            }
        }
        return new KafkaSettings(null, properties, Set.of(), Set.of());
    }

    /**
     * Returns the properties one kind of client takes ({@code clientNames}, such as
     * {@code ConsumerConfig.configNames()}), so that a producer is not handed a consumer's settings.
     */
    public Map<String, String> propertiesFor(Set<String> clientNames) {
        Map<String, String> out = new TreeMap<>();
        properties.forEach((k, v) -> {
            if (clientNames.contains(k)) {
                out.put(k, v);
            }
        });
        return Collections.unmodifiableMap(out);
    }

    /** Returns the names that none of {@code clientNames} takes: typos, or settings of another client. */
    public Set<String> unknown(Set<String> clientNames) {
        Set<String> out = new TreeSet<>(properties.keySet());
        out.removeAll(clientNames);
        return Collections.unmodifiableSet(out);
    }

    /** Returns whether there is no property at all. */
    public boolean isEmpty() {
        return properties.isEmpty();
    }

    /**
     * Returns where the properties come from, by name and without values, for a start-up log line:
     * {@code "security.protocol, ssl.truststore.location from /etc/kafka.properties; sasl.mechanism from KAFKA_* variables"},
     * or {@code "none"}.
     */
    public String summary() {
        StringBuilder s = new StringBuilder();
        if (!fromFile.isEmpty()) {
            s.append(String.join(", ", fromFile)).append(" from ").append(file);
        }
        if (!fromEnv.isEmpty()) {
            s.append(s.length() == 0 ? "" : "; ").append(String.join(", ", fromEnv)).append(" from KAFKA_* variables");
        }
        return s.length() == 0 ? "none" : s.toString();
    }

    /** Returns the {@link #masked()} properties; never a secret value. */
    @Override
    public String toString() {
        return masked().toString();
    }

    private static Map<String, String> read(Path file) {
        Properties p = new Properties();
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(in);
        } catch (NoSuchFileException e) {
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": no such file");
        } catch (AccessDeniedException e) {
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": permission denied");
        } catch (CharacterCodingException e) {
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": not UTF-8 text");
        } catch (IOException | IllegalArgumentException e) {
            // Properties.load throws IllegalArgumentException for a malformed \\uXXXX escape.
            throw new InvalidSettingException(SETTING, "cannot read " + file + ": " + e.getMessage());
        }
        Map<String, String> map = new TreeMap<>();
        p.stringPropertyNames().forEach(name -> map.put(name, p.getProperty(name)));
        return map;
    }

    private static String forbiddenReason() {
        return ", which may not be set: heartbeats are byte arrays and need the byte-array (de)serializers";
    }
}
