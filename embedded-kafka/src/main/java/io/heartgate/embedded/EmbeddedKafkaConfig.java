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
 * @param security TLS and users for a SASL_SSL client listener; {@code null} serves plain
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
     * Turns the client listener into SASL_SSL, so that a broker reachable beyond loopback only talks to
     * clients that know a password, over TLS. One listener offers every mechanism: SCRAM-SHA-256,
     * SCRAM-SHA-512 and PLAIN always, OAUTHBEARER only with {@code unsecuredOauthForTests}.
     *
     * <p>Every user gets a SCRAM credential for both SCRAM mechanisms, set again on each start, so that
     * a reused data dir picks up new users and changed passwords; SCRAM users of earlier starts stay.
     * PLAIN knows exactly the users of this start: the broker checks PLAIN passwords against its own
     * settings file (owner-only, like its key), not against the SCRAM credentials. A user whose name
     * Kafka's JAAS parser cannot take as part of an option name (anything but letters, digits and
     * {@code . _ - $}) gets no PLAIN login. The broker keeps users of its own: {@value #BROKER_USER},
     * for its inter-broker connections and its own admin client, and {@code heartgate-probe}, whose
     * password is made anew on each start and kept nowhere. There is no authorizer: every authenticated
     * user may do anything, which suits a development broker. {@link #toString()} names the users but
     * never shows a password.
     *
     * @param scramUsers user name to password, for SCRAM and PLAIN alike; may be empty; must not name
     *     the broker's own users
     * @param certificatePem the server's certificate chain as PEM, leaf first, naming the advertised
     *     host; also the file clients trust. {@code null} together with {@code privateKeyPem} makes a
     *     self-signed one in the data dir on first start (see {@link SelfSignedTls})
     * @param privateKeyPem the certificate's unencrypted PKCS#8 PEM key ({@code BEGIN PRIVATE KEY})
     * @param clientCertificatesPem {@code null} asks clients for no certificate. Otherwise PEM
     *     certificates (CAs, or self-signed client certificates themselves) that the listener trusts for
     *     client certificates: it then sets {@code ssl.client.auth=requested}, so that a client may
     *     present a certificate, which must chain to one of these, and one without a certificate still
     *     gets in with SASL alone. The SASL login, not the certificate, names the principal.
     * @param unsecuredOauthForTests <strong>for tests only; never in an install.</strong> Enables
     *     OAUTHBEARER with Kafka's built-in unsecured JWS handlers: the broker accepts any unsigned token
     *     ({@code alg: none}) and takes its {@code sub} claim as the principal, so anyone who can reach
     *     the port can log in as anyone. It exists so that a client's OAUTHBEARER settings can be tested
     *     against a real broker without an identity provider. {@code false} unless asked for
     */
    public record Security(Map<String, String> scramUsers, Path certificatePem, Path privateKeyPem,
                           Path clientCertificatesPem, boolean unsecuredOauthForTests) {

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

        /**
         * Creates security with the given certificate and key, no client certificates and no
         * OAUTHBEARER; see the record's components.
         */
        public Security(Map<String, String> scramUsers, Path certificatePem, Path privateKeyPem) {
            this(scramUsers, certificatePem, privateKeyPem, null, false);
        }

        /** Returns security with a self-signed certificate made in the data dir on first start. */
        public static Security selfSigned(Map<String, String> scramUsers) {
            return new Security(scramUsers, null, null);
        }

        /**
         * Returns a copy that requests client certificates and trusts those chaining to the PEM
         * certificates in {@code pem}; {@code null} stops asking for them.
         */
        public Security withClientCertificates(Path pem) {
            return new Security(scramUsers, certificatePem, privateKeyPem, pem, unsecuredOauthForTests);
        }

        /**
         * Returns a copy that also accepts OAUTHBEARER with unsigned tokens. <strong>For tests
         * only:</strong> anyone who reaches the port can then log in as anyone; see the record's
         * {@code unsecuredOauthForTests}.
         */
        public Security withUnsecuredOauthForTests() {
            return new Security(scramUsers, certificatePem, privateKeyPem, clientCertificatesPem, true);
        }

        /** Returns the user names, certificate paths and modes; never a password. */
        @Override
        public String toString() {
            return "Security[scramUsers=" + new TreeMap<>(scramUsers).keySet() + ", certificatePem="
                    + (certificatePem == null ? "self-signed" : certificatePem) + ", clientCertificatesPem="
                    + (clientCertificatesPem == null ? "none" : clientCertificatesPem)
                    + (unsecuredOauthForTests ? ", UNSECURED OAUTHBEARER FOR TESTS" : "") + "]";
        }
    }
}
