package io.heartgate.loadgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KeysTest {

    @TempDir
    Path dir;

    @Test
    void labelsKeysByTheirFirstSixCharacters() {
        assertThat(Keys.labels(List.of("sk-alpha-0001", "team-b-secret"))).containsExactly("sk-alp…", "team-b…");
    }

    @Test
    void neverShowsAShortKeyWhole() {
        assertThat(Keys.labels(List.of("abcdef", "xy", "k"))).containsExactly("abc…", "x…", "…");
    }

    @Test
    void tellsApartKeysThatShareAPrefixAndKeepsOneLabelPerKey() {
        assertThat(Keys.labels(List.of("sk-abc-1", "sk-abc-2", "sk-abc-1", "sk-abc-3")))
                .containsExactly("sk-a…", "sk-a…#2", "sk-a…", "sk-a…#3"); // at most half of a short key
    }

    @Test
    void readsOneKeyALineSkippingCommentsAndBlanks() throws IOException {
        Path file = Files.writeString(dir.resolve("keys.txt"), "# callers\nsk-one\n\n  sk-two  \n#sk-off\n");

        assertThat(Keys.read(file)).containsExactly("sk-one", "sk-two");
    }

    @Test
    void namesAFileItCannotRead() {
        Path absent = dir.resolve("absent.txt");

        assertThatThrownBy(() -> Keys.read(absent)).isInstanceOfSatisfying(InvalidSettingException.class, e -> {
            assertThat(e.setting()).isEqualTo("keysFile");
            assertThat(e.problem()).isEqualTo("cannot read " + absent + ": no such file");
        });
    }
}
