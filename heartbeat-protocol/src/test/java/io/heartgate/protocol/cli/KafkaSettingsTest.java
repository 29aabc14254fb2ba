package io.heartgate.protocol.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class KafkaSettingsTest {

    /** A few of the client's names, as ProducerConfig.configNames() would give them. */
    private static final Set<String> KNOWN = Set.of("bootstrap.servers", "security.protocol", "sasl.mechanism",
            "sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.type", "ssl.key.password",
            "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.keystore.password", "client.id",
            "value.serializer", "sasl.oauthbearer.client.credentials.client.secret");

    private static final String JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required "
            + "username=\"agent\" password=\"s3cr3t-jaas\";";
    private static final String PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN-inline-key\n-----END PRIVATE KEY-----";

    @TempDir
    Path dir;

    @Test
    void readsTheFileAndLetsTheEnvironmentWin() throws IOException {
        Path file = write("""
                security.protocol=SASL_SSL
                sasl.mechanism=PLAIN
                ssl.truststore.location=/etc/kafka/ca.pem
                ssl.truststore.type=PEM
                """);

        KafkaSettings s = KafkaSettings.load(file, Map.of("KAFKA_SASL_MECHANISM", "SCRAM-SHA-512",
                "KAFKA_SASL_JAAS_CONFIG", JAAS), KNOWN);

        assertThat(s.properties()).containsExactlyInAnyOrderEntriesOf(Map.of(
                "security.protocol", "SASL_SSL", "sasl.mechanism", "SCRAM-SHA-512", "sasl.jaas.config", JAAS,
                "ssl.truststore.location", "/etc/kafka/ca.pem", "ssl.truststore.type", "PEM"));
        assertThat(s.fromFile()).containsExactly("security.protocol", "ssl.truststore.location", "ssl.truststore.type");
        assertThat(s.fromEnv()).containsExactly("sasl.jaas.config", "sasl.mechanism");
        assertThat(s.file()).contains(file);
        assertThat(s.summary()).isEqualTo("security.protocol, ssl.truststore.location, ssl.truststore.type from "
                + file + "; sasl.jaas.config, sasl.mechanism from KAFKA_* variables");
    }

    @Test
    void worksWithoutAFile() {
        KafkaSettings s = KafkaSettings.load(null, Map.of("KAFKA_SECURITY_PROTOCOL", "SSL"), KNOWN);

        assertThat(s.properties()).containsExactly(Map.entry("security.protocol", "SSL"));
        assertThat(s.file()).isEmpty();
        assertThat(KafkaSettings.load(null, Map.of(), KNOWN).isEmpty()).isTrue();
        assertThat(KafkaSettings.load(null, Map.of(), KNOWN).summary()).isEqualTo("none");
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
            "KAFKA_SASL_MECHANISM, sasl.mechanism",
            "KAFKA_SSL_TRUSTSTORE_LOCATION, ssl.truststore.location",
            "KAFKA_FOO__BAR, foo_bar",
            "KAFKA_FOO___BAR, foo-bar",
            "KAFKA_A__B___C_D, a_b-c.d",
            "KAFKA_X, x",
    })
    void mapsVariableNamesTheConfluentWay(String variable, String property) {
        assertThat(KafkaSettings.propertyName(variable)).contains(property);
    }

    @ParameterizedTest
    @ValueSource(strings = {"KAFKA_", "SASL_MECHANISM", "kafka_sasl_mechanism", "MY_KAFKA_SASL_MECHANISM"})
    void mapsNoOtherVariables(String variable) {
        assertThat(KafkaSettings.propertyName(variable)).isEmpty();
    }

    @Test
    void ignoresVariablesThatNameNoClientPropertyAndEmptyOnes() {
        KafkaSettings s = KafkaSettings.load(null, Map.of(
                "KAFKA_HEAP_OPTS", "-Xmx1g",
                "KAFKA_CONFIG_FILE", "/etc/kafka.properties",
                "KAFKA_SSL_KEY_PASSWORD", "",
                "SASL_MECHANISM", "PLAIN",
                "KAFKA_CLIENT_ID", "agent-7"), KNOWN);

        assertThat(s.properties()).containsExactly(Map.entry("client.id", "agent-7"));
    }

    @Test
    void masksEverySecretValue() throws IOException {
        Path file = write("""
                security.protocol=SSL
                ssl.key.password=key-pass-1
                ssl.keystore.password=store-pass-2
                ssl.keystore.key=%s
                ssl.keystore.certificate.chain=-----BEGIN CERTIFICATE-----
                sasl.oauthbearer.client.credentials.client.secret=oauth-secret-3
                """.formatted(PEM_KEY.replace("\n", "\\n")));

        KafkaSettings s = KafkaSettings.load(file, Map.of("KAFKA_SASL_JAAS_CONFIG", JAAS), KNOWN);

        assertThat(s.masked()).containsExactlyInAnyOrderEntriesOf(Map.of(
                "security.protocol", "SSL",
                "ssl.key.password", "******",
                "ssl.keystore.password", "******",
                "ssl.keystore.key", "******",
                "ssl.keystore.certificate.chain", "-----BEGIN CERTIFICATE-----",
                "sasl.oauthbearer.client.credentials.client.secret", "******",
                "sasl.jaas.config", "******"));
        assertThat(s.properties()).containsEntry("ssl.keystore.key", PEM_KEY).containsEntry("sasl.jaas.config", JAAS);
        assertThat(s.toString()).contains("security.protocol=SSL")
                .doesNotContain("key-pass-1", "store-pass-2", "inline-key", "oauth-secret-3", "s3cr3t-jaas");
        assertThat(s.summary()).doesNotContain("key-pass-1", "store-pass-2", "inline-key", "oauth-secret-3", "s3cr3t-jaas");
    }

    @ParameterizedTest
    @CsvSource({
            "sasl.jaas.config, true",
            "ssl.key.password, true",
            "SSL.KEYSTORE.PASSWORD, true",
            "ssl.keystore.key, true",
            "sasl.oauthbearer.client.credentials.client.secret, true",
            "sasl.oauthbearer.assertion.private.key.passphrase, true",
            "ssl.keystore.certificate.chain, false",
            "ssl.truststore.certificates, false",
            "sasl.mechanism, false",
            "ssl.keystore.location, false",
    })
    void tellsSecretNames(String name, boolean secret) {
        assertThat(KafkaSettings.isSecret(name)).isEqualTo(secret);
    }

    @Test
    void refusesASerializerInTheFileOrTheEnvironment() throws IOException {
        Path file = write("value.serializer=org.apache.kafka.common.serialization.StringSerializer\n");

        assertThatThrownBy(() -> KafkaSettings.load(file, Map.of(), KNOWN))
                .isInstanceOfSatisfying(InvalidSettingException.class, e -> {
                    assertThat(e.setting()).isEqualTo("kafkaConfig");
                    assertThat(e.problem()).isEqualTo(file + " sets value.serializer, which may not be set: heartbeats"
                            + " are byte arrays and need the byte-array (de)serializers");
                });
        assertThatThrownBy(() -> KafkaSettings.load(null, Map.of("KAFKA_VALUE_SERIALIZER", "x"), KNOWN))
                .isInstanceOf(InvalidSettingException.class)
                .hasMessageStartingWith("kafkaConfig environment variable KAFKA_VALUE_SERIALIZER sets value.serializer,");
    }

    @Test
    void keepsBootstrapServersForTheCallerToOverride() throws IOException {
        KafkaSettings s = KafkaSettings.load(write("bootstrap.servers=broker-1:9093\n"), Map.of(), KNOWN);

        assertThat(s.properties()).containsEntry("bootstrap.servers", "broker-1:9093");
    }

    @Test
    void namesAFileItCannotRead() {
        Path absent = dir.resolve("absent.properties");

        assertThatThrownBy(() -> KafkaSettings.load(absent, Map.of(), KNOWN))
                .isInstanceOfSatisfying(InvalidSettingException.class, e -> {
                    assertThat(e.setting()).isEqualTo("kafkaConfig");
                    assertThat(e.problem()).isEqualTo("cannot read " + absent + ": no such file");
                });
        assertThatThrownBy(() -> KafkaSettings.load(dir, Map.of(), KNOWN))
                .isInstanceOf(InvalidSettingException.class)
                .hasMessageStartingWith("kafkaConfig cannot read " + dir + ": ");
    }

    @Test
    void returnsUnmodifiableMaps() {
        KafkaSettings s = KafkaSettings.load(null, Map.of("KAFKA_CLIENT_ID", "a"), KNOWN);

        assertThatThrownBy(() -> s.properties().put("x", "y")).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> s.masked().put("x", "y")).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> s.fromEnv().add("x")).isInstanceOf(UnsupportedOperationException.class);
    }

    private Path write(String text) throws IOException {
        return Files.writeString(dir.resolve("kafka.properties"), text);
    }
}
