package io.heartgate.agent;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * Installs the agent's signal handlers. A handler of our own for SIGTERM and SIGINT (rather than a
 * shutdown hook) lets the agent publish its tombstone and then exit with status 0, where the JVM's
 * default would exit 143. SIGUSR2 switches the node to DRAINING.
 */
final class Signals {

    private static final Logger log = LoggerFactory.getLogger(Signals.class);

    private Signals() {
    }

    /** Runs {@code action} on the first SIGTERM or SIGINT. */
    static void onTerminate(Runnable action) {
        handle("TERM", action);
        handle("INT", action);
    }

    /** Runs {@code action} on every SIGUSR2. */
    static void onDrain(Runnable action) {
        handle("USR2", action);
    }

    private static void handle(String name, Runnable action) {
        try {
            Signal.handle(new Signal(name), s -> action.run());
        } catch (IllegalArgumentException e) {
            // Some platforms reserve a signal for the JVM; the agent works without that handler.
            log.warn("Cannot handle SIG{} on this platform: {}", name, e.getMessage());
        }
    }
}
