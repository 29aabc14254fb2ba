package io.heartgate.scheduler;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * Installs the scheduler's SIGTERM and SIGINT handler. A handler of our own (rather than a shutdown
 * hook) lets the scheduler drain and then exit with status 0, where the JVM's default exits 143.
 */
final class Signals {

    private static final Logger log = LoggerFactory.getLogger(Signals.class);

    private Signals() {
    }

    /** Runs {@code action} on SIGTERM or SIGINT. */
    static void onTerminate(Runnable action) {
        for (String name : new String[] {"TERM", "INT"}) {
            try {
                Signal.handle(new Signal(name), s -> action.run());
            } catch (IllegalArgumentException e) {
                log.warn("Cannot handle SIG{} on this platform: {}", name, e.getMessage());
            }
        }
    }
}
