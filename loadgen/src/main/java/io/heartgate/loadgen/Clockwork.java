package io.heartgate.loadgen;

import java.util.concurrent.CountDownLatch;

/**
 * Gives the runner its time: a monotonic reading, waiting, and timers. Tests drive a manual one,
 * so the open-loop logic is checked to the nanosecond without waiting.
 */
public interface Clockwork extends AutoCloseable {

    /** Returns monotonic nanoseconds; only differences mean anything. */
    long nanos();

    /** Returns once {@link #nanos()} has reached {@code target}; at once when it already has. */
    void sleepUntil(long target) throws InterruptedException;

    /** Runs {@code task} once at or after {@code atNanos}, on a timer thread; ignored after {@link #close()}. */
    void schedule(long atNanos, Runnable task);

    /** Waits until {@code latch} opens or {@link #nanos()} reaches {@code deadline}; returns whether it opened. */
    boolean await(CountDownLatch latch, long deadline) throws InterruptedException;

    /** Stops the timers; tasks not yet run never run. */
    @Override
    void close();
}
