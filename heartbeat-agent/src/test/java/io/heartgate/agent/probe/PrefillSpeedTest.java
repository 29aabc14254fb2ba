package io.heartgate.agent.probe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.heartgate.agent.probe.Payloads.PrefillCounters;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

class PrefillSpeedTest {

    private static final Offset<Double> CLOSE = within(1e-6);

    private final PrefillSpeed speed = new PrefillSpeed();

    /**
     * One reading a probe, as a llama.cpp server's counters grow: 143 tokens in 8.168 s at start (the
     * PR #13196 excerpt), then 2048 tokens in 1.024 s -> 2000, idle -> 2000, 300 tokens in 0.2 s ->
     * 1500, idle again -> 1500.
     */
    @Test
    void measuresEachPeriodThatPrefilledAndKeepsTheLastSpeedWhileIdle() {
        assertThat(speed.next(new PrefillCounters(143, 8.168))).as("nothing to compare with yet").isNull();
        assertThat(speed.next(new PrefillCounters(2191, 9.192))).isCloseTo(2000.0, CLOSE);
        assertThat(speed.next(new PrefillCounters(2191, 9.192))).as("idle: the speed stays").isCloseTo(2000.0, CLOSE);
        assertThat(speed.next(new PrefillCounters(2491, 9.392))).isCloseTo(1500.0, CLOSE);
        assertThat(speed.next(new PrefillCounters(2491, 9.392))).isCloseTo(1500.0, CLOSE);
    }

    @Test
    void forgetsTheSpeedWhenTheCountersGoBack() {
        speed.next(new PrefillCounters(1000, 1.0));
        assertThat(speed.next(new PrefillCounters(3000, 2.0))).isCloseTo(2000.0, CLOSE);

        assertThat(speed.next(new PrefillCounters(40, 0.5))).as("restarted: the old speed is not its own").isNull();
        assertThat(speed.next(new PrefillCounters(40, 0.5))).isNull();
        assertThat(speed.next(new PrefillCounters(1040, 1.0))).as("measured anew from the restart's reading")
                .isCloseTo(2000.0, CLOSE);
    }

    @Test
    void forgetsTheSpeedOnResetAndWhenTheCountersAreGone() {
        speed.next(new PrefillCounters(0, 0));
        assertThat(speed.next(new PrefillCounters(500, 1.0))).isCloseTo(500.0, CLOSE);

        speed.reset();
        assertThat(speed.next(new PrefillCounters(900, 2.0))).as("after a failed probe").isNull();
        assertThat(speed.next(new PrefillCounters(1900, 3.0))).isCloseTo(1000.0, CLOSE);
        assertThat(speed.next(null)).as("a server without the counters").isNull();
        assertThat(speed.next(new PrefillCounters(2900, 4.0))).isNull();
    }

    /**
     * Older llama.cpp builds print the seconds to the millisecond: three tokens in under a millisecond
     * show no time at all, and a speed from them would be infinite. Their tokens count in the next
     * period instead.
     */
    @Test
    void aPeriodWithTooLittleTimeToMeasureAddsToTheNext() {
        speed.next(new PrefillCounters(1000, 1.0));
        assertThat(speed.next(new PrefillCounters(2000, 1.5))).isCloseTo(2000.0, CLOSE);

        assertThat(speed.next(new PrefillCounters(2003, 1.5))).as("no time recorded: the last speed")
                .isCloseTo(2000.0, CLOSE);
        assertThat(speed.next(new PrefillCounters(3003, 2.5))).as("1003 tokens over 1 s").isCloseTo(1003.0, CLOSE);
    }

    @Test
    void timeWithoutTokensIsNotASpeed() {
        speed.next(new PrefillCounters(1000, 1.0));
        speed.next(new PrefillCounters(2000, 2.0));

        assertThat(speed.next(new PrefillCounters(2000, 2.5))).isCloseTo(1000.0, CLOSE);
        assertThat(speed.next(new PrefillCounters(2500, 3.0))).as("the idle time is not counted")
                .isCloseTo(1000.0, CLOSE);
    }
}
