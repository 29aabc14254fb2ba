package io.heartgate.loadgen;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PercentilesTest {

    @Test
    void takesTheNearestRank() {
        assertThat(Percentiles.of(new double[] {4, 1, 3, 2})).isEqualTo(new Percentiles(4, 2.0, 4.0, 4.0, 4.0));
        double[] hundred = new double[100];
        for (int i = 0; i < 100; i++) {
            hundred[i] = 100 - i;
        }
        assertThat(Percentiles.of(hundred)).isEqualTo(new Percentiles(100, 50.0, 90.0, 99.0, 100.0));
        double[] thousand = new double[1000];
        for (int i = 0; i < 1000; i++) {
            thousand[i] = i + 1;
        }
        assertThat(Percentiles.of(thousand)).isEqualTo(new Percentiles(1000, 500.0, 900.0, 990.0, 1000.0));
    }

    @Test
    void givesOneValueForEveryFigureOfOneSample() {
        assertThat(Percentiles.of(new double[] {7.25})).isEqualTo(new Percentiles(1, 7.25, 7.25, 7.25, 7.25));
    }

    @Test
    void givesNullsForNoSamples() {
        assertThat(Percentiles.of(new double[0])).isEqualTo(new Percentiles(0, null, null, null, null));
    }

    @Test
    void roundsToTheMicrosecondAndLeavesItsInputAlone() {
        double[] values = {3.0004, 1.23456};
        assertThat(Percentiles.of(values).max()).isEqualTo(3.0);
        assertThat(Percentiles.of(values).p50()).isEqualTo(1.235);
        assertThat(values).containsExactly(3.0004, 1.23456);
    }
}
