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
        assertThat(p.getProperty("sasl.enabled.mechanisms")).isEqualTo("SCRAM-SHA-256,SCRAM-SHA-512");
        assertThat(p.getProperty("sasl.mechanism.inter.broker.protocol")).isEqualTo("SCRAM-SHA-512");
        assertThat(p.getProperty("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"))
                .contains("username=\"heartgate-broker\"");
        assertThat(p.getProperty("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config")).doesNotContain("password");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.keystore.type")).isEqualTo("PEM");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.keystore.key")).isEqualTo("KEY");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.keystore.certificate.chain")).isEqualTo("CERT");
        assertThat(p.getProperty("listener.name.sasl_ssl.ssl.truststore.location"))
                .isEqualTo(dir.resolve("cert.pem").toString());
        assertThat(p.stringPropertyNames()).noneMatch(name -> p.getProperty(name).contains("alice-secret"));
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
        assertThatThrownBy(() -> BrokerSecurity.clientProperties(dir, "u", "p", "PLAIN"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private static EmbeddedKafkaConfig givenCertificate(Path dir) throws Exception {
        // Read as text only, never parsed here: placeholders do.
        Files.writeString(dir.resolve("cert.pem"), "CERT");
        Files.writeString(dir.resolve("key.pem"), "KEY");
        return EmbeddedKafkaConfig.forTests().withSecurity(new EmbeddedKafkaConfig.Security(
                Map.of("alice", "alice-secret"), dir.resolve("cert.pem"), dir.resolve("key.pem")));
    }
}
