package io.heartgate.loadgen;

import java.util.PriorityQueue;
import java.util.concurrent.CountDownLatch;

/**
 * Keeps test time: it moves only when the runner sleeps or waits, or a test calls {@link #advance},
 * and runs due timer tasks on the caller's thread in time order. Not thread-safe; one thread drives it.
 */
final class ManualClockwork implements Clockwork {

    private record Task(long at, long seq, Runnable action) {
    }

    private final PriorityQueue<Task> tasks = new PriorityQueue<>((a, b) -> a.at != b.at
            ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
    private long now = 1_000_000_000L; // not zero, so nothing relies on a zero start
    private long seq;
    private boolean closed;

    @Override
    public long nanos() {
        return now;
    }

    /** Moves time on by {@code nanos} without running tasks, as slow work on the caller's thread would. */
    void advance(long nanos) {
        now += nanos;
    }

    @Override
    public void sleepUntil(long target) {
        runDue(target);
        now = Math.max(now, target);
    }

    @Override
    public void schedule(long atNanos, Runnable task) {
        if (!closed) {
            tasks.add(new Task(atNanos, seq++, task));
        }
    }

    @Override
    public boolean await(CountDownLatch latch, long deadline) {
        while (latch.getCount() > 0 && !tasks.isEmpty() && tasks.peek().at <= deadline) {
            runNext();
        }
        if (latch.getCount() > 0) {
            now = Math.max(now, deadline);
        }
        return latch.getCount() == 0;
    }

    private void runDue(long target) {
        while (!tasks.isEmpty() && tasks.peek().at <= target) {
            runNext();
        }
    }

    private void runNext() {
        Task t = tasks.poll();
        now = Math.max(now, t.at);
        t.action.run();
    }

    @Override
    public void close() {
        closed = true;
        tasks.clear();
    }
}
