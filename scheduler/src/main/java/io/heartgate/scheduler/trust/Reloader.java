package io.heartgate.scheduler.trust;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks every {@link Reloading} file of a scheduler on one daemon thread, every period: file reads
 * stay off the proxy's event loops. Thread-safe; {@link #close()} stops the thread.
 */
public final class Reloader implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Reloader.class);

    private final List<Reloading<?>> watched = new CopyOnWriteArrayList<>();
    private final ScheduledExecutorService thread;

    /** Starts checking every {@code period}. */
    public Reloader(Duration period) {
        thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "heartgate-reload");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::checkAll, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Adds {@code value} to the files checked; returns it. */
    public <T> Reloading<T> watch(Reloading<T> value) {
        watched.add(value);
        return value;
    }

    private void checkAll() {
        for (Reloading<?> r : watched) {
            try {
                r.check();
            } catch (Throwable t) { // a timer task that throws is never run again
                log.error("Reloading a watched file failed", t);
            }
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
