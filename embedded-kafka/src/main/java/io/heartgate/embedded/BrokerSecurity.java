package io.heartgate.embedded;

import java.io.IOException;
import java.io.StreamTokenizer;
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
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
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
import org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule;
import org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredLoginCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler;
import org.apache.kafka.common.security.plain.PlainLoginModule;
import org.apache.kafka.common.security.scram.ScramLoginModule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The SASL_SSL side of one broker: its TLS material, its own SCRAM user and the settings derived from
 * them, for the server, for its format step and for clients. One listener offers SCRAM-SHA-256,
 * SCRAM-SHA-512, PLAIN and, for tests only, unsecured OAUTHBEARER. Immutable.
 */
final class BrokerSecurity {

    static final String LISTENER = "SASL_SSL";
    static final ScramMechanism BROKER_MECHANISM = ScramMechanism.SCRAM_SHA_512;
    /** Logs in once per start, with a password made for that start, to show that the newest credentials work. */
    static final String PROBE_USER = "heartgate-probe";
    /** Holds the broker user's password: SCRAM keeps only a salted hash, and the broker needs the password. */
    static final String BROKER_SECRET_FILE = "broker-user.secret";
    static final String PLAIN = "PLAIN";
    static final String OAUTHBEARER = OAuthBearerLoginModule.OAUTHBEARER_MECHANISM;
    /**
     * The user names a PLAIN {@code user_NAME} option can carry: Kafka's JAAS parser reads an option
     * name as one {@link StreamTokenizer} word, and it can be neither quoted nor escaped.
     */
    private static final Pattern PLAIN_USER = Pattern.compile("[A-Za-z0-9._$-]+");
    private static final String LISTENER_PREFIX = "listener.name." + LISTENER.toLowerCase(Locale.ROOT) + ".";
    private static final int SCRAM_ITERATIONS = 4096;
    private static final Logger log = LoggerFactory.getLogger(BrokerSecurity.class);

    private final Map<String, String> users;
    private final SelfSignedTls.PemFiles tls;
    private final String brokerPassword;
    private final Path clientCertificates;
    private final boolean unsecuredOauth;

    private BrokerSecurity(Map<String, String> users, SelfSignedTls.PemFiles tls, String brokerPassword,
                           Path clientCertificates, boolean unsecuredOauth) {
        this.users = users;
        this.tls = tls;
        this.brokerPassword = brokerPassword;
        this.clientCertificates = clientCertificates;
        this.unsecuredOauth = unsecuredOauth;
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
            warnAbout(security);
            return new BrokerSecurity(security.scramUsers(), tls, password, security.clientCertificatesPem(),
                    security.unsecuredOauthForTests());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot keep the broker user's password in " + secretFile, e);
        }
    }

    private static void warnAbout(EmbeddedKafkaConfig.Security security) {
        Set<String> noPlain = security.scramUsers().keySet().stream()
                .filter(user -> !PLAIN_USER.matcher(user).matches())
                .collect(Collectors.toCollection(TreeSet::new));
        if (!noPlain.isEmpty()) {
            log.warn("Users {} get no PLAIN login: a PLAIN user name may hold only letters, digits and . _ - $;"
                    + " they can still use SCRAM", noPlain);
        }
        if (security.unsecuredOauthForTests()) {
            log.warn("Embedded Kafka accepts unsigned OAUTHBEARER tokens: anyone can log in as anyone; for"
                    + " tests only");
        }
    }

    /** Returns the certificate file clients trust. */
    Path certificatePem() {
        return tls.certificate();
    }

    /** Returns the SASL mechanisms the listener offers, in the order of {@code sasl.enabled.mechanisms}. */
    List<String> mechanisms() {
        List<String> mechanisms = new ArrayList<>(List.of(ScramMechanism.SCRAM_SHA_256.mechanismName(),
                ScramMechanism.SCRAM_SHA_512.mechanismName(), PLAIN));
        if (unsecuredOauth) {
            mechanisms.add(OAUTHBEARER);
        }
        return mechanisms;
    }

    /**
     * Returns the server settings of the SASL_SSL listener; they hold the broker's password and key and
     * every PLAIN user's password, so the file they go to must be owner-only and never logged.
     */
    Map<String, String> serverProperties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("sasl.enabled.mechanisms", String.join(",", mechanisms()));
        p.put("sasl.mechanism.inter.broker.protocol", BROKER_MECHANISM.mechanismName());
        // Each enabled mechanism needs a login context on the listener; the inter-broker one also says
        // who the broker is when it connects to itself (transaction markers, for one).
        p.put(LISTENER_PREFIX + "scram-sha-256." + SaslConfigs.SASL_JAAS_CONFIG,
                ScramLoginModule.class.getName() + " required;");
        p.put(LISTENER_PREFIX + "scram-sha-512." + SaslConfigs.SASL_JAAS_CONFIG,
                scramJaas(EmbeddedKafkaConfig.Security.BROKER_USER, brokerPassword));
        p.put(LISTENER_PREFIX + "plain." + SaslConfigs.SASL_JAAS_CONFIG, plainServerJaas());
        if (unsecuredOauth) {
            // Named although they are Kafka's defaults, so that a changed default cannot quietly turn
            // this into something else; the broker's own token is never sent: it logs in with SCRAM.
            String oauth = LISTENER_PREFIX + "oauthbearer.";
            p.put(oauth + SaslConfigs.SASL_JAAS_CONFIG, OAuthBearerLoginModule.class.getName()
                    + " required unsecuredLoginStringClaim_sub=" + quote(EmbeddedKafkaConfig.Security.BROKER_USER)
                    + ";");
            p.put(oauth + "sasl.server.callback.handler.class",
                    OAuthBearerUnsecuredValidatorCallbackHandler.class.getName());
            p.put(oauth + SaslConfigs.SASL_LOGIN_CALLBACK_HANDLER_CLASS,
                    OAuthBearerUnsecuredLoginCallbackHandler.class.getName());
        }
        p.put(LISTENER_PREFIX + SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
        p.put(LISTENER_PREFIX + SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG, read(tls.certificate()));
        p.put(LISTENER_PREFIX + SslConfigs.SSL_KEYSTORE_KEY_CONFIG, read(tls.privateKey()));
        p.put(LISTENER_PREFIX + SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        if (clientCertificates == null) {
            p.put(LISTENER_PREFIX + SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, tls.certificate().toString());
        } else {
            // The broker's own certificate stays trusted: it connects to itself with it, as a client.
            p.put(LISTENER_PREFIX + SslConfigs.SSL_TRUSTSTORE_CERTIFICATES_CONFIG,
                    withNewline(read(tls.certificate())) + read(clientCertificates));
            // Only with the listener prefix does Kafka apply this to a SASL_SSL listener (KIP-684);
            // "requested" lets clients without a certificate in on SASL alone.
            p.put(LISTENER_PREFIX + "ssl.client.auth", "requested");
        }
        return p;
    }

    /** Returns the PLAIN login context: one {@code user_NAME="PASSWORD"} option per user that can have one. */
    private String plainServerJaas() {
        StringBuilder jaas = new StringBuilder(PlainLoginModule.class.getName()).append(" required");
        new TreeMap<>(users).forEach((user, password) -> {
            if (PLAIN_USER.matcher(user).matches()) {
                jaas.append(" user_").append(user).append('=').append(quote(password));
            }
        });
        return jaas.append(';').toString();
    }

    /**
     * Returns the client settings for {@code user} as {@link #clientProperties(Path, String, String, String)},
     * refusing OAUTHBEARER where this broker does not accept it.
     *
     * @throws IllegalArgumentException for a mechanism the broker does not offer
     */
    Map<String, String> clientProperties(String user, String password, String mechanism) {
        if (!mechanisms().contains(mechanism)) {
            throw new IllegalArgumentException("this broker does not offer " + mechanism + "; it offers "
                    + mechanisms());
        }
        return clientProperties(tls.certificate(), user, password, mechanism);
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
     * @param password ignored for {@code OAUTHBEARER}, whose unsigned token names {@code user} as its
     *     {@code sub}; required otherwise
     * @param mechanism {@code SCRAM-SHA-256}, {@code SCRAM-SHA-512}, {@code PLAIN} or {@code OAUTHBEARER}
     * @throws IllegalArgumentException for another mechanism
     */
    static Map<String, String> clientProperties(Path certificatePem, String user, String password, String mechanism) {
        String jaas;
        if (ScramMechanism.fromMechanismName(mechanism) != ScramMechanism.UNKNOWN) {
            jaas = scramJaas(user, password);
        } else if (PLAIN.equals(mechanism)) {
            jaas = PlainLoginModule.class.getName() + " required username=" + quote(user) + " password="
                    + quote(Objects.requireNonNull(password, "password")) + ";";
        } else if (OAUTHBEARER.equals(mechanism)) {
            jaas = OAuthBearerLoginModule.class.getName() + " required unsecuredLoginStringClaim_sub="
                    + quote(user) + ";";
        } else {
            throw new IllegalArgumentException("not a SCRAM, PLAIN or OAUTHBEARER mechanism: " + mechanism);
        }
        Map<String, String> p = new LinkedHashMap<>();
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, SecurityProtocol.SASL_SSL.name);
        p.put(SaslConfigs.SASL_MECHANISM, mechanism);
        p.put(SaslConfigs.SASL_JAAS_CONFIG, jaas);
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, certificatePem.toString());
        return p;
    }

    /** Returns the {@code --add-scram} argument that creates the broker user when storage is formatted. */
    static String formatScramArgument(String brokerPassword) {
        return BROKER_MECHANISM.mechanismName() + "=[name=" + EmbeddedKafkaConfig.Security.BROKER_USER
                + ",password=" + brokerPassword + "]";
    }

    private static String scramJaas(String user, String password) {
        return ScramLoginModule.class.getName() + " required username=" + quote(user) + " password="
                + quote(Objects.requireNonNull(password, "password")) + ";";
    }

    private static String withNewline(String pem) {
        return pem.endsWith("\n") ? pem : pem + "\n";
    }

    /** Quotes for Kafka's JAAS parser, a {@link StreamTokenizer}: backslash escapes. */
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
