package io.heartgate.scheduler.trust;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReloadingTest {

    @TempDir
    Path dir;

    private final AtomicInteger parses = new AtomicInteger();

    private Reloading<String> load(Path file) {
        return Reloading.load("words", "words", List.of(file), files -> {
            parses.incrementAndGet();
            String text = new String(files.get(0), StandardCharsets.UTF_8);
            if (text.contains("bad")) {
                throw new InvalidSettingException("words", "line 1: bad word");
            }
            return text.strip();
        });
    }

    @Test
    void aChangedFileIsSwappedInAndAnUnchangedOneIsNotParsedAgain() throws Exception {
        Path f = Files.writeString(dir.resolve("w"), "one");
        Reloading<String> r = load(f);
        assertThat(r.get()).isEqualTo("one");
        assertThat(r.check()).isFalse();
        assertThat(parses).hasValue(1);

        Files.writeString(f, "two");
        assertThat(r.check()).isTrue();
        assertThat(r.get()).isEqualTo("two");
    }

    @Test
    void aBadOrMissingFileKeepsTheValueInUseAndIsParsedOnce() throws Exception {
        Path f = Files.writeString(dir.resolve("w"), "one");
        Reloading<String> r = load(f);
        Files.writeString(f, "bad");
        assertThat(r.check()).isFalse();
        assertThat(r.check()).isFalse();
        assertThat(r.get()).isEqualTo("one");
        assertThat(parses).hasValue(2);

        Files.delete(f);
        assertThat(r.check()).isFalse();
        assertThat(r.get()).isEqualTo("one");

        Files.writeString(f, "three");
        assertThat(r.check()).isTrue();
        assertThat(r.get()).isEqualTo("three");
    }

    @Test
    void aFileThatCannotBeReadAtStartIsASettingError() {
        assertThatThrownBy(() -> load(dir.resolve("absent")))
                .isInstanceOf(InvalidSettingException.class)
                .hasMessageContaining("cannot read");
    }
}
