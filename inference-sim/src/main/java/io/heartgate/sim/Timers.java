package io.heartgate.sim;

/**
 * Runs actions after a delay: the engine's only way to wait, so that tests can stand in a fake clock
 * for real time.
 */
interface Timers {

    /**
     * Runs {@code action} once, {@code delayMs} milliseconds (more than 0) from now, on the thread that
     * drives the engine.
     *
     * @return an id for {@link #cancel}, 0 or more
     */
    long schedule(long delayMs, Runnable action);

    /** Stops the action scheduled under {@code id}; an id that already ran or never existed is ignored. */
    void cancel(long id);
}
