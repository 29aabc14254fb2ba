package io.heartgate.scheduler.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class RestartPointTest {

    private static final Instant NOW = Instant.parse("2026-12-06T12:00:00Z");
    private static final Duration LOOK_BACK = Duration.ofMinutes(3);

    @Test
    void readsBackTheLongestExpiryWhenThePointIsRecent() {
        RestartPoint p = new RestartPoint("r1", NOW.minusMillis(200), 1_000);
        assertThat(p.readFrom(NOW, LOOK_BACK, 3)).as("3 missed intervals of 1 s").isEqualTo(NOW.minusSeconds(3));
        assertThat(p.readFrom(NOW, LOOK_BACK, 5)).as("by the reader's own missed count").isEqualTo(NOW.minusSeconds(5));
    }

    @Test
    void readsFromThePointLessTheClockMarginWhenThatIsEarlier() {
        // Nodes that joined after the point was written have all their heartbeats after it.
        RestartPoint p = new RestartPoint("r1", NOW.minusSeconds(10), 1_000);
        assertThat(p.readFrom(NOW, LOOK_BACK, 3)).isEqualTo(NOW.minusSeconds(11));
        RestartPoint empty = new RestartPoint("r1", NOW.minusSeconds(2), 0);
        assertThat(empty.readFrom(NOW, LOOK_BACK, 3)).as("no node listed: from the point").isEqualTo(NOW.minusSeconds(3));
    }

    @Test
    void neverReadsFurtherBackThanTheLookBack() {
        assertThat(new RestartPoint("r1", NOW.minusSeconds(1), 60_000).readFrom(NOW, LOOK_BACK, 5))
                .isEqualTo(NOW.minus(LOOK_BACK));
        assertThat(new RestartPoint("r1", NOW.minus(Duration.ofHours(1)), 1_000).readFrom(NOW, LOOK_BACK, 3))
                .as("a stale point").isEqualTo(NOW.minus(LOOK_BACK));
    }
}
