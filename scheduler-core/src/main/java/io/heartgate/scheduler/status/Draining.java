package io.heartgate.scheduler.status;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * The one flag that says the scheduler is shutting down: the proxy refuses new connections and
 * closes each open one after its response, and {@code /readyz} answers 503. Set once, never
 * cleared. Thread-safe.
 */
public final class Draining implements BooleanSupplier {

    private final AtomicBoolean on = new AtomicBoolean();

    /** Starts draining; returns whether this call did (false when it had begun already). */
    public boolean begin() {
        return on.compareAndSet(false, true);
    }

    /** Returns whether draining has begun. */
    @Override
    public boolean getAsBoolean() {
        return on.get();
    }
}
