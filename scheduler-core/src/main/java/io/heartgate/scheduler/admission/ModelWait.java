package io.heartgate.scheduler.admission;

/**
 * One model's gateway queue as it stands, for the autoscaling signals: requests waiting, and how
 * long the longest of them has waited.
 */
public record ModelWait(int depth, long longestWaitNanos) {
}
