package io.heartgate.protocol.signing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HeartbeatKeysTest {

    static final String SECRET_A = "5c0f3e0d9b7a4c21e8f6a3b2d1c0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2";
    static final String SECRET_B = "0e1d2c3b4a5968778695a4b3c2d1e0f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

    @Test
    void readsKeysInFileOrderSkippingBlankLinesAndComments() {
        HeartbeatKeys keys = HeartbeatKeys.parse("""
                # rotation: new key first, old key until every agent has the new one

                2026-06\t%s   gpu-*   # signs the GPU fleet
                  2026-01  %s
                """.formatted(SECRET_A, SECRET_B));

        assertThat(keys.size()).isEqualTo(2);
        assertThat(keys.first().id()).isEqualTo("2026-06");
        assertThat(keys.first().nodeIdGlob()).contains("gpu-*");
        assertThat(keys.keys().get(1).id()).isEqualTo("2026-01");
        assertThat(keys.keys().get(1).nodeIdGlob()).isEmpty();
        assertThat(keys.find("2026-01")).containsSame(keys.keys().get(1));
        assertThat(keys.find("2025-12")).isEmpty();
    }

    @Test
    void acceptsWindowsLineEndingsAndAByteOrderMark() {
        HeartbeatKeys keys = HeartbeatKeys.parse("\uFEFFk1 " + SECRET_A + "\r\nk2 " + SECRET_B + " gpu-a\r\n");

        assertThat(keys.keys()).extracting(HeartbeatKey::id).containsExactly("k1", "k2");
        assertThat(keys.keys().get(1).allows("gpu-a")).isTrue();
    }

    @Test
    void findsKeysByTheirHeaderBytesAmongMany() {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < 100; i++) {
            text.append("key-").append(i).append(' ').append(SECRET_A).append('\n');
        }
        HeartbeatKeys keys = HeartbeatKeys.parse(text.toString());

        for (int i = 0; i < 100; i++) {
            assertThat(keys.find(("key-" + i).getBytes()).id()).isEqualTo("key-" + i);
        }
        assertThat(keys.find("key-100".getBytes())).isNull();
        assertThat(keys.find(new byte[0])).isNull();
    }

    @Test
    void toStringShowsIdsAndGlobsButNoSecret() {
        HeartbeatKeys keys = HeartbeatKeys.parse("k1 " + SECRET_A + " gpu-*\nk2 " + SECRET_B);

        assertThat(keys.toString()).isEqualTo("[k1 (nodes gpu-*), k2 (any node)]");
        assertThat(keys.first().toString()).doesNotContain(SECRET_A);
    }

    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '|', value = {
            "k1 SECRET\\n\\nk2|line 3: 1 field, expected KEY_ID SECRET [NODE_ID_GLOB]",
            "SECRET|line 1: 1 field, expected KEY_ID SECRET [NODE_ID_GLOB]",
            "k1 SECRET gpu-* extra|line 1: 4 fields, expected KEY_ID SECRET [NODE_ID_GLOB] (a secret may not contain spaces)",
            "k1 SECRET\\nk/2 SECRET|line 2: key id must be 1 to 64 of A-Za-z0-9._-",
            "k:1 SECRET|line 1: key id must be 1 to 64 of A-Za-z0-9._-",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa SECRET|line 1: key id must be 1 to 64 of A-Za-z0-9._-",
            "k1 0123456789abcdef0123456789abcde|line 1: secret must be at least 32 characters, was 31 (generate one with: openssl rand -hex 32)",
            "k1 SECRET gpu-?|line 1: node id glob may only contain A-Za-z0-9._:- and *",
            "# keys\\nk1 SECRET\\nk2 SECRET\\nk1 SECRET|line 4: key id k1 is already defined on line 2",
    })
    void refusesAMalformedLineNamingItWithoutTheSecret(String text, String problem) {
        String file = text.replace("\\n", "\n").replace("SECRET", SECRET_A);

        assertThatThrownBy(() -> HeartbeatKeys.parse(file))
                .isInstanceOfSatisfying(InvalidSettingException.class, e -> {
                    assertThat(e.setting()).isEqualTo("heartbeatKeys");
                    assertThat(e.problem()).isEqualTo(problem);
                    assertThat(e.getMessage()).doesNotContain(SECRET_A).doesNotContain("0123456789abcdef");
                });
    }

    @Test
    void neverQuotesASecretThatSpillsIntoTheGlobOrTheKeyIdField() {
        // A base64 secret broken by a space, and a line with the secret first: both put secret text elsewhere.
        String base64 = "q5Yt0vJ3mW8xZ2cB7nR4pL6sK9dF1gH0 aE3u+/Xw5Ty2Vb8=";
        String swapped = SECRET_A + " k1";

        assertThatThrownBy(() -> HeartbeatKeys.parse("k1 " + base64))
                .hasMessage("heartbeatKeys line 1: node id glob may only contain A-Za-z0-9._:- and *");
        assertThatThrownBy(() -> HeartbeatKeys.parse(swapped))
                .hasMessage("heartbeatKeys line 1: secret must be at least 32 characters, was 2"
                        + " (generate one with: openssl rand -hex 32)");
    }

    @Test
    void refusesAFileWithoutKeys() {
        assertThatThrownBy(() -> HeartbeatKeys.parse("# nothing yet\n\n"))
                .isInstanceOf(InvalidSettingException.class)
                .hasMessage("heartbeatKeys has no keys (one a line: KEY_ID SECRET [NODE_ID_GLOB])");
        assertThatThrownBy(() -> HeartbeatKeys.parse("")).isInstanceOf(InvalidSettingException.class);
    }

    @Test
    void loadsAFileAndNamesOneItCannotRead(@TempDir Path dir) throws IOException {
        Path file = Files.writeString(dir.resolve("keys"), "k1 " + SECRET_A + "\n");

        assertThat(HeartbeatKeys.load(file).first().id()).isEqualTo("k1");
        assertThatThrownBy(() -> HeartbeatKeys.load(dir.resolve("absent")))
                .isInstanceOf(InvalidSettingException.class)
                .hasMessage("heartbeatKeys cannot read " + dir.resolve("absent") + ": no such file");
    }
}
