package io.heartgate.testkit;

import io.heartgate.embedded.EmbeddedKafkaBroker;
import io.heartgate.embedded.EmbeddedKafkaConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.extension.ExtensionContext;

/** The one secured embedded broker of a test JVM; closed by JUnit when the root context closes. */
@SuppressWarnings("deprecation") // CloseableResource: still the one interface every JUnit 5.x closes
final class SecuredKafka implements SecuredTestKafka, AutoCloseable, ExtensionContext.Store.CloseableResource {

    private static final Map<String, String> USERS = Map.of(
            AGENT, AGENT_PASSWORD,
            SCHEDULER, SCHEDULER_PASSWORD);

    private final EmbeddedKafkaBroker broker;

    private SecuredKafka(EmbeddedKafkaBroker broker) {
        this.broker = broker;
    }

    static SecuredKafka start() {
        return new SecuredKafka(EmbeddedKafkaBroker.start(EmbeddedKafkaConfig.forTests()
                .withSecurity(EmbeddedKafkaConfig.Security.selfSigned(USERS))));
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
    public Path writeClientConfig(Path dir, String user, String password, String mechanism) {
        Properties props = new Properties();
        props.putAll(clientProperties(user, password, mechanism));
        try {
            Files.createDirectories(dir);
            Path file = Files.createTempFile(dir, "kafka-" + user + "-", ".properties");
            try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
                props.store(w, "Kafka client settings for " + user + " (" + mechanism + ")");
            }
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write a Kafka client config in " + dir, e);
        }
    }

    @Override
    public void close() {
        broker.close();
    }
}
