package io.heartgate.testkit;

import io.heartgate.embedded.EmbeddedKafkaBroker;
import io.heartgate.embedded.EmbeddedKafkaConfig;
import io.heartgate.embedded.SelfSignedTls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.SslConfigs;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The one secured embedded broker of a test JVM; closed by JUnit when the root context closes. */
@SuppressWarnings("deprecation") // CloseableResource: still the one interface every JUnit 5.x closes
final class SecuredKafka implements SecuredTestKafka, AutoCloseable, ExtensionContext.Store.CloseableResource {

    private static final Logger log = LoggerFactory.getLogger(SecuredKafka.class);
    private static final Map<String, String> USERS = Map.of(
            AGENT, AGENT_PASSWORD,
            SCHEDULER, SCHEDULER_PASSWORD);

    private final EmbeddedKafkaBroker broker;
    private final Path clientDir;
    private final SelfSignedTls.PemFiles clientCertificate;

    private SecuredKafka(EmbeddedKafkaBroker broker, Path clientDir, SelfSignedTls.PemFiles clientCertificate) {
        this.broker = broker;
        this.clientDir = clientDir;
        this.clientCertificate = clientCertificate;
    }

    static SecuredKafka start() {
        Path clientDir;
        try {
            clientDir = Files.createTempDirectory("heartgate-client-tls-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a dir for the test client certificate", e);
        }
        try {
            // Made before the broker starts: the broker reads the certificates it trusts only then.
            SelfSignedTls.PemFiles client = SelfSignedTls.generate(clientDir, List.of(AGENT));
            EmbeddedKafkaConfig.Security security = EmbeddedKafkaConfig.Security.selfSigned(USERS)
                    .withClientCertificates(client.certificate())
                    .withUnsecuredOauthForTests();
            EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start(EmbeddedKafkaConfig.forTests().withSecurity(security));
            return new SecuredKafka(broker, clientDir, client);
        } catch (RuntimeException e) {
            deleteDir(clientDir);
            throw e;
        }
    }

    @Override
    public String bootstrapServers() {
        return broker.bootstrapServers();
    }

    @Override
    public Path certificatePem() {
        return broker.certificatePem().orElseThrow();
    }

    @Override
    public SelfSignedTls.PemFiles clientCertificate() {
        return clientCertificate;
    }

    @Override
    public Map<String, String> clientProperties(String user) {
        String password = USERS.get(user);
        if (password == null) {
            throw new IllegalArgumentException("not a known test user: " + user + "; known: " + USERS.keySet());
        }
        return clientProperties(user, password, "SCRAM-SHA-512");
    }

    @Override
    public Map<String, String> clientProperties(String user, String password, String mechanism) {
        return broker.clientProperties(user, password, mechanism);
    }

    @Override
    public Map<String, String> inlinePemClientProperties(String user, String password, String mechanism,
                                                         SelfSignedTls.PemFiles keyPair) {
        Map<String, String> p = new LinkedHashMap<>(clientProperties(user, password, mechanism));
        // Kafka refuses a PEM trust store given both as a file and inline.
        p.remove(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG);
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_CERTIFICATES_CONFIG, read(certificatePem()));
        if (keyPair != null) {
            p.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
            p.put(SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG, read(keyPair.certificate()));
            // Unencrypted PKCS#8, so no ssl.key.password: Kafka rejects a password for a plain key.
            p.put(SslConfigs.SSL_KEYSTORE_KEY_CONFIG, read(keyPair.privateKey()));
        }
        return p;
    }

    @Override
    public Path writeClientConfig(Path dir, String user, String password, String mechanism) {
        return write(dir, "kafka-" + user + "-", clientProperties(user, password, mechanism),
                "Kafka client settings for " + user + " (" + mechanism + ")");
    }

    @Override
    public Path writeClientConfig(Path dir, Map<String, String> properties) {
        return write(dir, "kafka-", properties, "Kafka client settings");
    }

    private static Path write(Path dir, String prefix, Map<String, String> settings, String comment) {
        Properties props = new Properties();
        props.putAll(settings);
        try {
            Files.createDirectories(dir);
            Path file = Files.createTempFile(dir, prefix, ".properties");
            try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
                props.store(w, comment);
            }
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write a Kafka client config in " + dir, e);
        }
    }

    private static String read(Path pem) {
        try {
            return Files.readString(pem, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + pem, e);
        }
    }

    @Override
    public void close() {
        try {
            broker.close();
        } finally {
            deleteDir(clientDir);
        }
    }

    private static void deleteDir(Path dir) {
        try (var files = Files.list(dir)) {
            for (Path file : files.toList()) {
                Files.deleteIfExists(file);
            }
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            // A leftover temp dir holding a test-only key is harmless, but say so.
            log.warn("Could not remove {}: {}", dir, e.toString());
        }
    }
}
