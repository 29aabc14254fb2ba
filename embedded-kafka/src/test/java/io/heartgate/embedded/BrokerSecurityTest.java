package io.heartgate.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.security.JaasContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BrokerSecurityTest {

    @Test
    void aSecuredBrokerServesOnlySaslSslAndKeepsTheControllerOnLoopback(@TempDir Path dir) throws Exception {
        EmbeddedKafkaConfig config = givenCertificate(dir).withHosts("0.0.0.0", "kafka.example");
        BrokerSecurity security = BrokerSecurity.prepare(config, dir, false);

        Properties p = EmbeddedKafkaBroker.serverProperties(config, 9092, 9093, dir, security);

        assertThat(p.getProperty("listeners")).isEqualTo("SASL_SSL://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093");
        assertThat(p.getProperty("advertised.listeners")).isEqualTo("SASL_SSL://kafka.example:9092");
        assertThat(p.getProperty("listener.security.protocol.map")).isEqualTo("SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT");
        assertThat(p.getProperty("inter.broker.listener.name")).isEqualTo("SASL_SSL");
        assertThat(p.getProperty("sasl.enabled.mechanisms")).isEqualTo("SCRAM-SHA-256,SCRAM-SHA-512,PLAIN");
        assertThat(p.getProperty("sasl.mechanism.inter.broker.protocol")).isEqualTo("SCRAM-SHA-512");
        assertThat(p.getProperty("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"))
                .contains("username=\"heartgate-broker\"");
        assertThat(p.getProperty("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config")).doesNotContain("password");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.keystore.type")).isEqualTo("PEM");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.keystore.key")).isEqualTo("KEY");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.keystore.certificate.chain")).isEqualTo("CERT");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.truststore.location"))
                .isEqualTo(dir.resolve("cert.pem").toString());
        assertThat(p.stringPropertyNames()).noneMatch(name -> p.getProperty(name).contains("alice-secret")
                && !name.equals("listener.name.sasl_ssl.plain.sasl.jaas.config"));
        // Unless asked for: no unsigned tokens, no client certificates.
        assertThat(p.stringPropertyNames()).noneMatch(name -> name.contains("oauthbearer"));
        assertThat(p.stringPropertyNames()).noneMatch(name -> name.endsWith("ssl.client.auth"));
        assertThatThrownBy(() -> security.clientProperties("alice", "x", "OAUTHBEARER"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not offer OAUTHBEARER");
    }

    @Test
    void plainKnowsEveryUserWhoseNameJaasCanCarryWithItsPasswordQuoted(@TempDir Path dir) throws Exception {
        String tricky = "p\"a\\ss, w]rd=1;";
        EmbeddedKafkaConfig config = givenCertificate(dir, Map.of("first.last-1$x", tricky, "bob", "bob-secret",
                "carol@corp", "carol-secret"));
        BrokerSecurity security = BrokerSecurity.prepare(config, dir, false);

        Properties p = EmbeddedKafkaBroker.serverProperties(config, 9092, 9093, dir, security);

        String key = "listener.name.sasl_ssl.plain.sasl.jaas.config";
        AppConfigurationEntry entry = JaasContext.loadServerContext(new ListenerName("SASL_SSL"), "PLAIN",
                // The broker strips the listener prefix before the mechanism's context is loaded.
                Map.of("plain.sasl.jaas.config", new Password(p.getProperty(key)))).configurationEntries().get(0);
        assertThat(entry.getLoginModuleName()).isEqualTo("org.apache.kafka.common.security.plain.PlainLoginModule");
        assertThat(entry.getOptions()).isEqualTo(Map.of("user_first.last-1$x", tricky, "user_bob", "bob-secret"));
    }

    @Test
    void unsecuredOauthAndClientCertificatesComeOnlyWhenAskedFor(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("clients.pem"), "CLIENT");
        EmbeddedKafkaConfig plain = givenCertificate(dir);
        EmbeddedKafkaConfig config = plain.withSecurity(plain.security()
                .withClientCertificates(dir.resolve("clients.pem")).withUnsecuredOauthForTests());
        BrokerSecurity security = BrokerSecurity.prepare(config, dir, false);

        Properties p = EmbeddedKafkaBroker.serverProperties(config, 9092, 9093, dir, security);

        assertThat(p.getProperty("sasl.enabled.mechanisms")).isEqualTo("SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER");
        assertThat(p.getProperty("listener.name.sasl_ssl.oauthbearer.sasl.jaas.config")).isEqualTo(
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
                        + " unsecuredLoginStringClaim_sub=\"heartgate-broker\";");
        assertThat(p.getProperty("listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class"))
                .endsWith("OAuthBearerUnsecuredValidatorCallbackHandler");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.client.auth")).isEqualTo("requested");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.truststore.certificates")).isEqualTo("CERT\nCLIENT");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.truststore.location")).isNull();

        Map<String, String> client = security.clientProperties("agent", null, "OAUTHBEARER");
        AppConfigurationEntry entry = JaasContext.loadClientContext(
                Map.of("sasl.jaas.config", new Password(client.get("sasl.jaas.config")))).configurationEntries().get(0);
        assertThat(entry.getOptions()).isEqualTo(Map.of("unsecuredLoginStringClaim_sub", "agent"));
        assertThat(client).containsEntry("sasl.mechanism", "OAUTHBEARER");
    }

    @Test
    void aPlaintextBrokerIsAsBefore(@TempDir Path dir) {
        Properties p = EmbeddedKafkaBroker.serverProperties(EmbeddedKafkaConfig.forTests(), 9092, 9093, dir, null);

        assertThat(p.getProperty("listeners")).isEqualTo("PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093");
        assertThat(p.getProperty("listener.security.protocol.map"))
                .isEqualTo("PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        assertThat(p.stringPropertyNames())
                .noneMatch(name -> name.startsWith("sasl.") || name.startsWith("listener.name."));
    }

    @Test
    void theBrokerPasswordIsMadeOnceAndAFormattedDirWithoutItIsRefused(@TempDir Path dir) throws Exception {
        EmbeddedKafkaConfig config = givenCertificate(dir);
        BrokerSecurity.prepare(config, dir, false);
        Path secret = dir.resolve(BrokerSecurity.BROKER_SECRET_FILE);
        String password = Files.readString(secret, StandardCharsets.UTF_8);
        assertThat(password).hasSize(48);

        BrokerSecurity.prepare(config, dir, true);
        assertThat(Files.readString(secret, StandardCharsets.UTF_8)).isEqualTo(password);

        Files.delete(secret);
        assertThatThrownBy(() -> BrokerSecurity.prepare(config, dir, true))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("formatted without the broker's own SCRAM user");
    }

    @Test
    void clientPropertiesSurviveKafkasJaasParserWhateverThePassword(@TempDir Path dir) {
        String password = "a \"quoted\" \\ back, slash;";
        Map<String, String> p = BrokerSecurity.clientProperties(dir.resolve("cert.pem"), "us\"er", password,
                "SCRAM-SHA-256");

        assertThat(p).containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("sasl.mechanism", "SCRAM-SHA-256")
                .containsEntry("ssl.truststore.type", "PEM")
                .containsEntry("ssl.truststore.location", dir.resolve("cert.pem").toString());
        AppConfigurationEntry entry = JaasContext.loadClientContext(
                Map.of("sasl.jaas.config", new Password(p.get("sasl.jaas.config")))).configurationEntries().get(0);
        assertThat(entry.getLoginModuleName()).isEqualTo("org.apache.kafka.common.security.scram.ScramLoginModule");
        assertThat(entry.getOptions().get("username")).isEqualTo("us\"er");
        assertThat(entry.getOptions().get("password")).isEqualTo(password);
        Map<String, String> plain = BrokerSecurity.clientProperties(dir.resolve("cert.pem"), "us\"er", password,
                "PLAIN");
        AppConfigurationEntry plainEntry = JaasContext.loadClientContext(
                Map.of("sasl.jaas.config", new Password(plain.get("sasl.jaas.config")))).configurationEntries().get(0);
        assertThat(plainEntry.getLoginModuleName()).isEqualTo("org.apache.kafka.common.security.plain.PlainLoginModule");
        assertThat(plainEntry.getOptions()).isEqualTo(Map.of("username", "us\"er", "password", password));
        assertThatThrownBy(() -> BrokerSecurity.clientProperties(dir, "u", "p", "GSSAPI"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private static EmbeddedKafkaConfig givenCertificate(Path dir) throws Exception {
        return givenCertificate(dir, Map.of("alice", "alice-secret"));
    }

    private static EmbeddedKafkaConfig givenCertificate(Path dir, Map<String, String> users) throws Exception {
        // Read as text only, never parsed here: placeholders do.
        Files.writeString(dir.resolve("cert.pem"), "CERT");
        Files.writeString(dir.resolve("key.pem"), "KEY");
        return EmbeddedKafkaConfig.forTests().withSecurity(new EmbeddedKafkaConfig.Security(
                users, dir.resolve("cert.pem"), dir.resolve("key.pem")));
    }
}
