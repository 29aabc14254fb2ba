package io.heartgate.testkit;

import io.heartgate.embedded.EmbeddedKafkaBroker;
import io.heartgate.embedded.SelfSignedTls;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

/**
 * Gives a test a real Kafka broker whose only client listener is SASL_SSL, with the users
 * {@value #AGENT} and {@value #SCHEDULER} and a self-signed certificate. Its one listener offers
 * SCRAM-SHA-256, SCRAM-SHA-512, PLAIN and OAUTHBEARER with Kafka's unsecured (unsigned, test-only)
 * tokens, and requests a client certificate: a client may present {@link #clientCertificate()} on top of
 * its SASL login, and one without a certificate gets in on SASL alone. Injected by {@link KafkaExtension}
 * like {@link TestKafka}; one broker per test JVM, started only when a test asks for it, so
 * PLAINTEXT-only test runs never pay for it.
 *
 * <p>Always the {@link EmbeddedKafkaBroker}, whatever {@code HEARTGATE_TEST_KAFKA}
 * says: the secured setup is ours to control, and no Docker variant is needed to test a client's side.
 */
public interface SecuredTestKafka {

    /** A user for agents, for every mechanism. */
    String AGENT = "agent";
    /** The password of {@link #AGENT}. */
    String AGENT_PASSWORD = "agent-secret";
    /** A user for schedulers, for every mechanism. */
    String SCHEDULER = "scheduler";
    /** The password of {@link #SCHEDULER}. */
    String SCHEDULER_PASSWORD = "scheduler-secret";

    /** Returns the bootstrap address, {@code HOST:PORT}. */
    String bootstrapServers();

    /** Returns the PEM certificate clients must trust. */
    Path certificatePem();

    /**
     * Returns a self-signed client certificate ({@code CN=agent}) and its unencrypted PKCS#8 key, which
     * the broker trusts as a client certificate. Removed when the broker closes.
     */
    SelfSignedTls.PemFiles clientCertificate();

    /**
     * Returns the client settings that log in as a known user with its password over SCRAM-SHA-512,
     * without {@code bootstrap.servers}.
     *
     * @throws IllegalArgumentException when {@code user} is not {@value #AGENT} or {@value #SCHEDULER}
     */
    Map<String, String> clientProperties(String user);

    /**
     * Returns the client settings that log in as anyone, with any password, so that a test can try a
     * wrong one; without {@code bootstrap.servers}. The broker's certificate is trusted from the file
     * {@link #certificatePem()} ({@code ssl.truststore.location}).
     *
     * @param password ignored for {@code OAUTHBEARER}: its unsigned token names {@code user} and the
     *     broker believes it
     * @param mechanism {@code SCRAM-SHA-256}, {@code SCRAM-SHA-512}, {@code PLAIN} or {@code OAUTHBEARER}
     */
    Map<String, String> clientProperties(String user, String password, String mechanism);

    /**
     * Returns {@link #clientProperties(String, String, String)} with no file to read: the broker's
     * certificate inline ({@code ssl.truststore.type=PEM}, {@code ssl.truststore.certificates}) and,
     * when {@code keyPair} is given, a PEM key store inline ({@code ssl.keystore.type=PEM},
     * {@code ssl.keystore.key}, {@code ssl.keystore.certificate.chain}) that the client presents as
     * its certificate during the TLS handshake.
     *
     * @param keyPair the client's certificate and key, such as {@link #clientCertificate()}; {@code null}
     *     for none
     */
    Map<String, String> inlinePemClientProperties(String user, String password, String mechanism,
                                                  SelfSignedTls.PemFiles keyPair);

    /**
     * Writes {@link #clientProperties(String, String, String)} as a Kafka client {@code .properties} file
     * in {@code dir}, the file a {@code --kafka-config} option reads, and returns its path; each call
     * writes a new file.
     */
    Path writeClientConfig(Path dir, String user, String password, String mechanism);

    /**
     * Writes {@code properties}, such as {@link #inlinePemClientProperties}, as a Kafka client
     * {@code .properties} file in {@code dir} and returns its path; multi-line PEM values are escaped
     * so that {@link Properties#load} reads them back whole. Each call writes a new file.
     */
    Path writeClientConfig(Path dir, Map<String, String> properties);
}
