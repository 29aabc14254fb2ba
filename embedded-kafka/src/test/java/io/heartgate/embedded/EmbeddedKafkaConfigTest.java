package io.heartgate.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EmbeddedKafkaConfigTest {

    private static final EmbeddedKafkaConfig.Security SECURITY =
            EmbeddedKafkaConfig.Security.selfSigned(Map.of("agent", "agent-secret", "scheduler", "s3cret"));

    @Test
    void isPlaintextUnlessSecurityIsGivenAndEveryCopyKeepsIt() {
        assertThat(EmbeddedKafkaConfig.forTests().security()).isNull();
        assertThat(new EmbeddedKafkaConfig("0.0.0.0", "h", 9092, null, Duration.ofSeconds(5), 256).security()).isNull();

        EmbeddedKafkaConfig secured = EmbeddedKafkaConfig.forTests().withSecurity(SECURITY);
        assertThat(secured.withPort(1).withDataDir(Path.of("d")).withHosts("a", "b").security()).isSameAs(SECURITY);
        assertThat(secured.withSecurity(null).security()).isNull();
    }

    @Test
    void namesUsersButNeverShowsAPassword() {
        String text = EmbeddedKafkaConfig.forTests().withSecurity(SECURITY).toString();

        assertThat(text).contains("agent", "scheduler", "self-signed").doesNotContain("agent-secret", "s3cret");
    }

    @Test
    void rejectsTheBrokersOwnUserBlankNamesEmptyPasswordsAndAHalfGivenCertificate() {
        assertThatThrownBy(() -> EmbeddedKafkaConfig.Security.selfSigned(
                Map.of(EmbeddedKafkaConfig.Security.BROKER_USER, "x"))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> EmbeddedKafkaConfig.Security.selfSigned(Map.of("heartgate-probe", "x")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> EmbeddedKafkaConfig.Security.selfSigned(Map.of(" ", "x")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> EmbeddedKafkaConfig.Security.selfSigned(Map.of("a", "")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new EmbeddedKafkaConfig.Security(Map.of(), Path.of("cert.pem"), null))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void asksForNoClientCertificateAndNoUnsecuredOauthUnlessToldAndSaysSo() {
        assertThat(SECURITY.clientCertificatesPem()).isNull();
        assertThat(SECURITY.unsecuredOauthForTests()).isFalse();
        assertThat(new EmbeddedKafkaConfig.Security(Map.of(), Path.of("c"), Path.of("k")).unsecuredOauthForTests())
                .isFalse();

        EmbeddedKafkaConfig.Security both = SECURITY.withClientCertificates(Path.of("clients.pem"))
                .withUnsecuredOauthForTests();

        assertThat(both.clientCertificatesPem()).isEqualTo(Path.of("clients.pem"));
        assertThat(both.unsecuredOauthForTests()).isTrue();
        assertThat(both.scramUsers()).isEqualTo(SECURITY.scramUsers());
        assertThat(both.toString()).contains("clients.pem", "UNSECURED OAUTHBEARER FOR TESTS");
        assertThat(SECURITY.toString()).doesNotContain("OAUTHBEARER");
        assertThat(both.withClientCertificates(null).clientCertificatesPem()).isNull();
    }

    @Test
    void copiesTheUsers() {
        Map<String, String> users = new HashMap<>(Map.of("a", "1"));
        EmbeddedKafkaConfig.Security security = EmbeddedKafkaConfig.Security.selfSigned(users);
        users.put("b", "2");

        assertThat(security.scramUsers()).containsOnlyKeys("a");
    }
}
