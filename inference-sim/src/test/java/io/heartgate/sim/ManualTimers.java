package io.heartgate.sim;

import java.time.Duration;
import java.util.Comparator;
import java.util.PriorityQueue;

/**
 * A fake clock and timer queue for engine tests: time moves only when the test calls {@link #advance},
 * and due actions run in the order they fall due (ties in the order scheduled), each with the clock at
 * its due time.
 */
final class ManualTimers implements Timers {

    private record Task(long dueNanos, long id, Runnable action) {
    }

    private final PriorityQueue<Task> tasks = new PriorityQueue<>(
            Comparator.comparingLong(Task::dueNanos).thenComparingLong(Task::id));
    private long nowNanos;
    private long nextId;
    private long lagNanos;
    private long stallNanos;

    /** Returns the fake monotonic time in nanoseconds; 0 at the start. */
    long nanos() {
        return nowNanos;
    }

    /** Returns the fake time in whole milliseconds. */
    long nowMs() {
        return nowNanos / 1_000_000;
    }

    /** Returns how many actions are scheduled and not yet run. */
    int pending() {
        return tasks.size();
    }

    /** Makes every action scheduled from now on run {@code lag} after it falls due, as timers on a busy host do. */
    void lag(Duration lag) {
        lagNanos = lag.toNanos();
    }

    /** Makes the next action scheduled run {@code stall} after it falls due (besides any {@link #lag}). */
    void stallNext(Duration stall) {
        stallNanos = stall.toNanos();
    }

    @Override
    public long schedule(long delayMs, Runnable action) {
        if (delayMs <= 0) {
            throw new IllegalArgumentException("the engine must not schedule a delay of " + delayMs + " ms");
        }
        long id = nextId++;
        tasks.add(new Task(nowNanos + delayMs * 1_000_000 + lagNanos + stallNanos, id, action));
        stallNanos = 0;
        return id;
    }

    @Override
    public void cancel(long id) {
        tasks.removeIf(t -> t.id() == id);
    }

    /** Moves time forward by {@code d}, running every action that falls due on the way. */
    void advance(Duration d) {
        long target = nowNanos + d.toNanos();
        while (!tasks.isEmpty() && tasks.peek().dueNanos() <= target) {
            Task t = tasks.poll();
            nowNanos = t.dueNanos();
            t.action().run();
        }
        nowNanos = target;
    }

    /** Moves time forward by {@code ms} milliseconds. */
    void advanceMs(long ms) {
        advance(Duration.ofMillis(ms));
    }
}
