package io.heartgate.loadgen;

import java.util.Arrays;

/**
 * Summarises a set of times exactly, from all samples sorted, by the nearest-rank method: the p-th
 * percentile of n values is the {@code ceil(p/100 * n)}-th smallest ({@code 1,2,3,4} has p50 2, p90 4).
 * Milliseconds, rounded to the microsecond; every figure is null when there are no values.
 *
 * @param count the number of values
 * @param p50 the median
 * @param p90 the 90th percentile
 * @param p99 the 99th percentile
 * @param max the largest value
 */
public record Percentiles(int count, Double p50, Double p90, Double p99, Double max) {

    /** Returns the summary of {@code values}, which it does not change. */
    public static Percentiles of(double[] values) {
        if (values.length == 0) {
            return new Percentiles(0, null, null, null, null);
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return new Percentiles(sorted.length, round(rank(sorted, 50)), round(rank(sorted, 90)), round(rank(sorted, 99)),
                round(sorted[sorted.length - 1]));
    }

    /** Returns the nearest-rank {@code p}-th percentile of ascending, non-empty {@code sorted}. */
    static double rank(double[] sorted, double p) {
        int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
    }

    static double round(double ms) {
        return Math.round(ms * 1000) / 1000.0;
    }
}
