package io.heartgate.loadgen;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Keeps real time: a ticker such as {@code System::nanoTime} and one daemon timer thread. Thread-safe. */
public final class SystemClockwork implements Clockwork {

    private static final Logger log = LoggerFactory.getLogger(SystemClockwork.class);

    private final LongSupplier ticker;
    private final ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "loadgen-timer");
        t.setDaemon(true);
        return t;
    });

    /** Creates it on {@code ticker}, monotonic nanoseconds. */
    public SystemClockwork(LongSupplier ticker) {
        this.ticker = ticker;
    }

    @Override
    public long nanos() {
        return ticker.getAsLong();
    }

    @Override
    public void sleepUntil(long target) throws InterruptedException {
        long left;
        while ((left = target - ticker.getAsLong()) > 0) {
            LockSupport.parkNanos(left);
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
        }
    }

    @Override
    public void schedule(long atNanos, Runnable task) {
        try {
            timers.schedule(() -> {
                try {
                    task.run();
                } catch (Throwable t) { // a timer task that throws would be lost silently otherwise
                    log.error("Load generator timer task failed", t);
                }
            }, Math.max(0, atNanos - ticker.getAsLong()), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            log.debug("Timer task after close ignored");
        }
    }

    @Override
    public boolean await(CountDownLatch latch, long deadline) throws InterruptedException {
        return latch.await(Math.max(0, deadline - ticker.getAsLong()), TimeUnit.NANOSECONDS);
    }

    @Override
    public void close() {
        timers.shutdownNow();
    }
}
