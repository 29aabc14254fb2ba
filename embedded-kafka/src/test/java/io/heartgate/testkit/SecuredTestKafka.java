package io.heartgate.testkit;

import java.nio.file.Path;
import java.util.Map;

/**
 * Gives a test a real Kafka broker whose only client listener is SASL_SSL, with the SCRAM users
 * {@value #AGENT} and {@value #SCHEDULER} and a self-signed certificate. Injected by
 * {@link KafkaExtension} like {@link TestKafka}; one broker per test JVM, started only when a test asks
 * for it, so PLAINTEXT-only test runs never pay for it.
 *
 * <p>Always the {@link io.heartgate.embedded.EmbeddedKafkaBroker}, whatever {@code HEARTGATE_TEST_KAFKA}
 * says: the secured setup is ours to control, and no Docker variant is needed to test a client's side.
 */
public interface SecuredTestKafka {

    /** A SCRAM user for agents. */
    String AGENT = "agent";
    /** The password of {@link #AGENT}. */
    String AGENT_PASSWORD = "agent-secret";
    /** A SCRAM user for schedulers. */
    String SCHEDULER = "scheduler";
    /** The password of {@link #SCHEDULER}. */
    String SCHEDULER_PASSWORD = "scheduler-secret";

    /** Returns the bootstrap address, {@code HOST:PORT}. */
    String bootstrapServers();

    /** Returns the PEM certificate clients must trust. */
    Path certificatePem();

    /**
     * Returns the client settings that log in as a known user with its password over SCRAM-SHA-512,
     * without {@code bootstrap.servers}.
     *
     * @throws IllegalArgumentException when {@code user} is not {@value #AGENT} or {@value #SCHEDULER}
     */
    Map<String, String> clientProperties(String user);

    /**
     * Returns the client settings that log in as anyone, with any password, so that a test can try a
     * wrong one; without {@code bootstrap.servers}.
     *
     * @param mechanism {@code SCRAM-SHA-256} or {@code SCRAM-SHA-512}
     */
    Map<String, String> clientProperties(String user, String password, String mechanism);

    /**
     * Writes {@link #clientProperties(String, String, String)} as a Kafka client {@code .properties} file
     * in {@code dir}, the file a {@code --kafka-config} option reads, and returns its path; each call
     * writes a new file.
     */
    Path writeClientConfig(Path dir, String user, String password, String mechanism);
}
