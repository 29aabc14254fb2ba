package io.heartgate.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class DurationsTest {

    @ParameterizedTest
    @CsvSource({"250ms, 250", "5s, 5000", "2m, 120000", "1h, 3600000", "0ms, 0", " 10 S , 10000"})
    void parsesEveryUnit(String text, long millis) {
        assertThat(Durations.parse(text)).isEqualTo(Duration.ofMillis(millis));
    }

    @ParameterizedTest
    @CsvSource({"400us, 400000, 400us", "2000us, 2000000, 2ms", "0us, 0, 0ms"})
    void microsecondsForCostsPerToken(String text, long nanos, String formatted) {
        assertThat(Durations.parse(text)).isEqualTo(Duration.ofNanos(nanos));
        assertThat(Durations.format(Duration.ofNanos(nanos))).isEqualTo(formatted);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "5", "-1s", "1.5s", "5 sec", "ms", "10d", "9999999999s"})
    void rejectsAnythingElseWithTheAcceptedFormat(String text) {
        assertThatThrownBy(() -> Durations.parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("250ms, 5s or 2m");
    }

    @ParameterizedTest
    @CsvSource({"250, 250ms", "1000, 1s", "1500, 1500ms", "120000, 2m", "0, 0ms", "7200000, 2h"})
    void formatsInTheLargestWholeUnit(long millis, String text) {
        assertThat(Durations.format(Duration.ofMillis(millis))).isEqualTo(text);
        assertThat(Durations.parse(text)).isEqualTo(Duration.ofMillis(millis));
    }
}
