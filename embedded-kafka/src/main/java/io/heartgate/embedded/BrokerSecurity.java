package io.heartgate.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.security.scram.ScramLoginModule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The SASL_SSL side of one broker: its TLS material, its own SCRAM user and the settings derived from
 * them, for the server, for its format step and for clients. Immutable.
 */
final class BrokerSecurity {

    static final String LISTENER = "SASL_SSL";
    static final ScramMechanism BROKER_MECHANISM = ScramMechanism.SCRAM_SHA_512;
    /** Logs in once per start, with a password made for that start, to show that the newest credentials work. */
    static final String PROBE_USER = "heartgate-probe";
    /** Holds the broker user's password: SCRAM keeps only a salted hash, and the broker needs the password. */
    static final String BROKER_SECRET_FILE = "broker-user.secret";
    private static final String LISTENER_PREFIX = "listener.name." + LISTENER.toLowerCase(Locale.ROOT) + ".";
    private static final int SCRAM_ITERATIONS = 4096;
    private static final Logger log = LoggerFactory.getLogger(BrokerSecurity.class);

    private final Map<String, String> users;
    private final SelfSignedTls.PemFiles tls;
    private final String brokerPassword;

    private BrokerSecurity(Map<String, String> users, SelfSignedTls.PemFiles tls, String brokerPassword) {
        this.users = users;
        this.tls = tls;
        this.brokerPassword = brokerPassword;
    }

    /**
     * Finds or makes the TLS material and the broker user's password for a start on {@code dataDir}.
     *
     * @param formatted whether the data dir's storage is already formatted; then the broker user must
     *     already exist, since only the format step can create a user before anyone can log in
     * @throws IllegalStateException when a formatted data dir has no broker user
     */
    static BrokerSecurity prepare(EmbeddedKafkaConfig config, Path dataDir, boolean formatted) {
        EmbeddedKafkaConfig.Security security = config.security();
        SelfSignedTls.PemFiles tls;
        if (security.certificatePem() != null) {
            tls = new SelfSignedTls.PemFiles(security.certificatePem(), security.privateKeyPem());
        } else {
            Set<String> hosts = new LinkedHashSet<>(List.of(config.advertisedHost(), "localhost", "127.0.0.1"));
            if (!"0.0.0.0".equals(config.listenHost())) {
                hosts.add(config.listenHost());
            }
            tls = SelfSignedTls.reuseOrGenerate(dataDir.resolve("tls"), hosts);
        }
        Path secretFile = dataDir.resolve(BROKER_SECRET_FILE);
        try {
            Files.createDirectories(dataDir);
            String password;
            if (Files.exists(secretFile)) {
                password = Files.readString(secretFile, StandardCharsets.UTF_8).trim();
            } else if (formatted) {
                throw new IllegalStateException("the Kafka data dir " + dataDir + " was formatted without the"
                        + " broker's own SCRAM user (" + BROKER_SECRET_FILE + " is missing); start a secured"
                        + " broker on a fresh data dir");
            } else {
                password = randomHex(24);
                OwnerOnlyFiles.write(secretFile, password.getBytes(StandardCharsets.UTF_8));
            }
            return new BrokerSecurity(security.scramUsers(), tls, password);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot keep the broker user's password in " + secretFile, e);
        }
    }

    /** Returns the certificate file clients trust. */
    Path certificatePem() {
        return tls.certificate();
    }

    /**
     * Returns the server settings of the SASL_SSL listener; they hold the broker's password and key, so
     * the file they go to must be owner-only.
     */
    Map<String, String> serverProperties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("sasl.enabled.mechanisms", ScramMechanism.SCRAM_SHA_256.mechanismName() + ","
                + ScramMechanism.SCRAM_SHA_512.mechanismName());
        p.put("sasl.mechanism.inter.broker.protocol", BROKER_MECHANISM.mechanismName());
        // Each enabled mechanism needs a login context on the listener; the inter-broker one also says
        // who the broker is when it connects to itself (transaction markers, for one).
        p.put(LISTENER_PREFIX + "scram-sha-256." + SaslConfigs.SASL_JAAS_CONFIG,
                ScramLoginModule.class.getName() + " required;");
        p.put(LISTENER_PREFIX + "scram-sha-512." + SaslConfigs.SASL_JAAS_CONFIG,
                jaas(EmbeddedKafkaConfig.Security.BROKER_USER, brokerPassword));
        p.put(LISTENER_PREFIX + SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
        p.put(LISTENER_PREFIX + SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG, read(tls.certificate()));
        p.put(LISTENER_PREFIX + SslConfigs.SSL_KEYSTORE_KEY_CONFIG, read(tls.privateKey()));
        p.put(LISTENER_PREFIX + SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(LISTENER_PREFIX + SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, tls.certificate().toString());
        return p;
    }

    /** Returns the settings of the broker's own admin client, which logs in as the broker user. */
    Map<String, String> adminProperties() {
        Map<String, String> p = clientProperties(tls.certificate(), EmbeddedKafkaConfig.Security.BROKER_USER,
                brokerPassword, BROKER_MECHANISM.mechanismName());
        // It may reach the broker as 127.0.0.1 where the certificate names only the advertised host; the
        // truststore holds exactly that one certificate, so the peer is still the broker.
        p.put(SslConfigs.SSL_ENDPOINT_IDENTIFICATION_ALGORITHM_CONFIG, "");
        return p;
    }

    /**
     * Sets every configured user's credentials for both mechanisms, then waits until the broker's
     * authenticator has them, not only the controller: a probe user written in the same request as the
     * last of them, with a new random password, must be able to log in.
     *
     * @param bootstrap where the broker answers
     * @throws IllegalStateException when that does not happen before {@code deadlineNanos} ({@link System#nanoTime()})
     */
    void createUsers(Admin admin, String bootstrap, long deadlineNanos) throws InterruptedException {
        if (users.isEmpty()) {
            return;
        }
        String probePassword = randomHex(16);
        // One request per mechanism: the controller refuses two changes to one user in one request.
        for (ScramMechanism mechanism : List.of(ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)) {
            List<UserScramCredentialAlteration> changes = new ArrayList<>();
            users.forEach((user, password) -> changes.add(upsert(user, mechanism, password)));
            if (mechanism == BROKER_MECHANISM) {
                changes.add(upsert(PROBE_USER, mechanism, probePassword));
            }
            alter(admin, changes, deadlineNanos);
        }
        // The probe stays, with a password nobody keeps: in Kafka 4.1 deleting a SCRAM-SHA-512 credential
        // left the broker user unable to log in after the next restart.
        awaitLogin(PROBE_USER, probePassword, bootstrap, deadlineNanos);
        log.debug("SCRAM users {} created", new TreeMap<>(users).keySet());
    }

    private void awaitLogin(String user, String password, String bootstrap, long deadlineNanos)
            throws InterruptedException {
        Map<String, Object> props = new LinkedHashMap<>(adminProperties());
        props.putAll(clientProperties(tls.certificate(), user, password, BROKER_MECHANISM.mechanismName()));
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "2000");
        try (Admin asUser = Admin.create(props)) {
            while (System.nanoTime() < deadlineNanos) {
                try {
                    asUser.describeCluster().nodes().get(2, TimeUnit.SECONDS);
                    return;
                } catch (ExecutionException | TimeoutException e) {
                    // The broker has not applied the new credentials yet; bounded by the deadline.
                    log.debug("SCRAM user {} cannot log in yet: {}", user, e.toString());
                    Thread.sleep(50);
                }
            }
        }
        throw new IllegalStateException("SCRAM user " + user + " could not log in before the start timeout");
    }

    private static UserScramCredentialUpsertion upsert(String user, ScramMechanism mechanism, String password) {
        return new UserScramCredentialUpsertion(user, new ScramCredentialInfo(mechanism, SCRAM_ITERATIONS), password);
    }

    private void alter(Admin admin, List<UserScramCredentialAlteration> changes, long deadlineNanos)
            throws InterruptedException {
        try {
            admin.alterUserScramCredentials(changes).all().get(remainingNanos(deadlineNanos), TimeUnit.NANOSECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot change the SCRAM credentials of "
                    + new TreeMap<>(users).keySet(), e);
        }
    }

    /**
     * Returns what a client needs to log in as {@code user} over SASL_SSL and trust {@code certificatePem}.
     *
     * @param mechanism {@code SCRAM-SHA-256} or {@code SCRAM-SHA-512}
     * @throws IllegalArgumentException for another mechanism
     */
    static Map<String, String> clientProperties(Path certificatePem, String user, String password, String mechanism) {
        if (ScramMechanism.fromMechanismName(mechanism) == ScramMechanism.UNKNOWN) {
            throw new IllegalArgumentException("not a SCRAM mechanism: " + mechanism);
        }
        Map<String, String> p = new LinkedHashMap<>();
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, SecurityProtocol.SASL_SSL.name);
        p.put(SaslConfigs.SASL_MECHANISM, mechanism);
        p.put(SaslConfigs.SASL_JAAS_CONFIG, jaas(user, password));
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, certificatePem.toString());
        return p;
    }

    /** Returns the {@code --add-scram} argument that creates the broker user when storage is formatted. */
    static String formatScramArgument(String brokerPassword) {
        return BROKER_MECHANISM.mechanismName() + "=[name=" + EmbeddedKafkaConfig.Security.BROKER_USER
                + ",password=" + brokerPassword + "]";
    }

    private static String jaas(String user, String password) {
        return ScramLoginModule.class.getName() + " required username=" + quote(user) + " password="
                + quote(password) + ";";
    }

    /** Quotes for Kafka's JAAS parser, a {@link java.io.StreamTokenizer}: backslash escapes. */
    static String quote(String value) {
        return "\"" + value.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String read(Path pem) {
        try {
            return Files.readString(pem, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + pem, e);
        }
    }

    private static String randomHex(int bytes) {
        byte[] secret = new byte[bytes];
        new SecureRandom().nextBytes(secret);
        return HexFormat.of().formatHex(secret);
    }

    private static long remainingNanos(long deadlineNanos) {
        return Math.max(1, deadlineNanos - System.nanoTime());
    }
}
