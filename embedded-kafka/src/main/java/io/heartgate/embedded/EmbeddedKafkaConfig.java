package io.heartgate.embedded;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Configures an {@link EmbeddedKafkaBroker}.
 *
 * @param listenHost the address the broker binds, such as {@code 127.0.0.1} or {@code 0.0.0.0}
 * @param advertisedHost the host clients are told to connect to; must be reachable by every agent
 * @param port the client port; 0 picks a free one
 * @param dataDir where the broker keeps its log; {@code null} uses a temp dir removed on close
 * @param startTimeout how long to wait for the broker to answer before giving up
 * @param maxHeapMiB heap of the broker's JVM
 * @param security TLS and SCRAM users for a SASL_SSL client listener; {@code null} serves plain
 *     PLAINTEXT, with no TLS and no authentication
 */
public record EmbeddedKafkaConfig(
        String listenHost,
        String advertisedHost,
        int port,
        Path dataDir,
        Duration startTimeout,
        int maxHeapMiB,
        Security security) {

    /** Checks ranges. */
    public EmbeddedKafkaConfig {
        Objects.requireNonNull(listenHost, "listenHost");
        Objects.requireNonNull(advertisedHost, "advertisedHost");
        Objects.requireNonNull(startTimeout, "startTimeout");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0 to 65535, was " + port);
        }
        if (startTimeout.isNegative() || startTimeout.isZero()) {
            throw new IllegalArgumentException("startTimeout must be positive");
        }
        if (maxHeapMiB < 128) {
            throw new IllegalArgumentException("maxHeapMiB must be at least 128, was " + maxHeapMiB);
        }
    }

    /** Configures a PLAINTEXT broker, as before security existed; see the record's components. */
    public EmbeddedKafkaConfig(String listenHost, String advertisedHost, int port, Path dataDir,
                               Duration startTimeout, int maxHeapMiB) {
        this(listenHost, advertisedHost, port, dataDir, startTimeout, maxHeapMiB, null);
    }

    /** Returns the configuration tests use: loopback, a free port, a temp dir, 60 s to start, PLAINTEXT. */
    public static EmbeddedKafkaConfig forTests() {
        return new EmbeddedKafkaConfig("127.0.0.1", "127.0.0.1", 0, null, Duration.ofSeconds(60), 384);
    }

    /** Returns a copy with another client port. */
    public EmbeddedKafkaConfig withPort(int newPort) {
        return new EmbeddedKafkaConfig(listenHost, advertisedHost, newPort, dataDir, startTimeout, maxHeapMiB,
                security);
    }

    /** Returns a copy keeping the log in {@code dir} (kept on close). */
    public EmbeddedKafkaConfig withDataDir(Path dir) {
        return new EmbeddedKafkaConfig(listenHost, advertisedHost, port, dir, startTimeout, maxHeapMiB, security);
    }

    /** Returns a copy that binds {@code listen} and advertises {@code advertised}. */
    public EmbeddedKafkaConfig withHosts(String listen, String advertised) {
        return new EmbeddedKafkaConfig(listen, advertised, port, dataDir, startTimeout, maxHeapMiB, security);
    }

    /** Returns a copy serving SASL_SSL as {@code newSecurity} says; {@code null} goes back to PLAINTEXT. */
    public EmbeddedKafkaConfig withSecurity(Security newSecurity) {
        return new EmbeddedKafkaConfig(listenHost, advertisedHost, port, dataDir, startTimeout, maxHeapMiB,
                newSecurity);
    }

    /**
     * Turns the client listener into SASL_SSL with SCRAM-SHA-256 and SCRAM-SHA-512, so that a broker
     * reachable beyond loopback only talks to clients that know a password, over TLS.
     *
     * <p>Every user gets a credential for both mechanisms, set again on each start, so that a reused
     * data dir picks up new users and changed passwords. The broker keeps users of its own:
     * {@value #BROKER_USER}, for its inter-broker connections and its own admin client, and
     * {@code heartgate-probe}, whose password is made anew on each start and kept nowhere. There is no
     * authorizer: every authenticated user may do anything, which suits a development broker.
     * {@link #toString()} names the users but never shows a password.
     *
     * @param scramUsers user name to password; may be empty; must not name the broker's own users
     * @param certificatePem the server's certificate chain as PEM, leaf first, naming the advertised
     *     host; also the file clients trust. {@code null} together with {@code privateKeyPem} makes a
     *     self-signed one in the data dir on first start (see {@link SelfSignedTls})
     * @param privateKeyPem the certificate's unencrypted PKCS#8 PEM key ({@code BEGIN PRIVATE KEY})
     */
    public record Security(Map<String, String> scramUsers, Path certificatePem, Path privateKeyPem) {

        /** The broker's own user, reserved. */
        public static final String BROKER_USER = "heartgate-broker";

        /** Checks the users and that the certificate and key come together; copies the map. */
        public Security {
            Objects.requireNonNull(scramUsers, "scramUsers");
            scramUsers.forEach((user, password) -> {
                if (user == null || user.isBlank()) {
                    throw new IllegalArgumentException("a SCRAM user name must not be blank");
                }
                if (password == null || password.isEmpty()) {
                    throw new IllegalArgumentException("SCRAM user " + user + " needs a password");
                }
                if (user.equals(BROKER_USER) || user.equals(BrokerSecurity.PROBE_USER)) {
                    throw new IllegalArgumentException("the SCRAM user " + user + " is the broker's own");
                }
            });
            scramUsers = Map.copyOf(scramUsers);
            if ((certificatePem == null) != (privateKeyPem == null)) {
                throw new IllegalArgumentException("give both certificatePem and privateKeyPem, or neither");
            }
        }

        /** Returns security with a self-signed certificate made in the data dir on first start. */
        public static Security selfSigned(Map<String, String> scramUsers) {
            return new Security(scramUsers, null, null);
        }

        /** Returns the user names and certificate paths; never a password. */
        @Override
        public String toString() {
            return "Security[scramUsers=" + new TreeMap<>(scramUsers).keySet() + ", certificatePem="
                    + (certificatePem == null ? "self-signed" : certificatePem) + "]";
        }
    }
}
