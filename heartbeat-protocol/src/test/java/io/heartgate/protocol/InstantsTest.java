package io.heartgate.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class InstantsTest {

    /** What {@link Instant#parse} gives for {@code text}: the instant, or the exception's class. */
    private static Object reference(String text) {
        try {
            return Instant.parse(text);
        } catch (DateTimeParseException e) {
            return e.getClass();
        }
    }

    private static Object fast(String text) {
        try {
            return Instants.parse(text);
        } catch (DateTimeParseException e) {
            return e.getClass();
        }
    }

    @Test
    void readsWhatAgentsWriteExactlyAsInstantParseDoes() {
        Random random = new Random(43);
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            // Any second from year 0 to 9999, with 0 to 9 fraction digits as Instant.toString() writes them.
            long second = Math.floorMod(random.nextLong(), 315_537_897_600L) - 62_167_219_200L;
            int nanos = switch (i % 4) {
                case 0 -> 0;
                case 1 -> random.nextInt(1000) * 1_000_000;
                case 2 -> random.nextInt(1_000_000) * 1000;
                default -> random.nextInt(1_000_000_000);
            };
            texts.add(Instant.ofEpochSecond(second, nanos).toString());
        }
        int readFast = 0;
        for (String t : texts) {
            assertThat(fast(t)).as(t).isEqualTo(reference(t));
            if (Instants.plainUtc(t) != null) {
                readFast++;
            }
        }
        assertThat(readFast).isEqualTo(texts.size());
    }

    @Test
    void everythingElseGetsInstantParsesAnswer() {
        for (String t : List.of("2026-12-06T14:51:02Z", "2026-12-06T14:51:02.1Z", "2026-12-06T14:51:02.123456789Z",
                "2026-12-06T14:51:02.1234567890Z", "2026-12-06T14:51:02.Z", "2026-12-06T14:51:02,5Z",
                "2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
                "2026-00-10T00:00:00Z", "2026-12-00T00:00:00Z", "2026-12-06T24:00:00Z", "2026-12-06T23:60:00Z",
                "2026-12-31T23:59:60Z", "2026-12-06T14:51:02+01:00", "2026-12-06T14:51:02z", "2026-12-06 14:51:02Z",
                "+12026-12-06T14:51:02Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
                "2026-1a-06T14:51:02Z", "2026-12-06T14:5 :02Z", "", "Z", "not a time", "2026-12-06T14:51:02.-1Z")) {
            assertThat(fast(t)).as(t).isEqualTo(reference(t));
        }
    }
}
