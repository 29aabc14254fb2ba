package io.heartgate.scheduler.trust;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KafkaUsersTest {

    @Test
    void readsUsersInFileOrder() {
        assertThat(KafkaUsers.parse("# users\nscheduler pw-0123456789\n\nagent  pw-abcdefghij\n"))
                .containsExactly(Map.entry("scheduler", "pw-0123456789"), Map.entry("agent", "pw-abcdefghij"));
    }

    @Test
    void faultsNameTheLineAndNeverThePassword() {
        assertFault("a b c\n", "line 1: expected NAME PASSWORD");
        assertFault("a short\n", "line 1: user a: the password must have at least 12 characters");
        assertFault("a/b secret-secret-1\n", "line 1: user name must be");
        assertFault("heartgate-broker secret-secret-1\n", "line 1: user names starting with heartgate-");
        assertFault("a secret-secret-1\na secret-secret-2\n", "line 2: user a is listed twice");
        assertFault("# none\n", "lists no user");
        assertThatThrownBy(() -> KafkaUsers.parse("a short\n")).hasMessageNotContaining("short\n")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain(" short"));
    }

    private static void assertFault(String text, String message) {
        assertThatThrownBy(() -> KafkaUsers.parse(text)).isInstanceOf(InvalidSettingException.class)
                .hasMessageContaining(message);
    }
}
