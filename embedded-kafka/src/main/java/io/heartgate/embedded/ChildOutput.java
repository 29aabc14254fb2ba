package io.heartgate.embedded;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the broker child's output on a daemon thread: forwards each line to this JVM's log (its
 * ERROR lines as WARN, its WARN lines as INFO, since the child's warnings are routine) and keeps the
 * last lines, for the message when the broker does not come up. Thread-safe.
 */
final class ChildOutput {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedKafkaBroker.class);
    private static final int LINES_KEPT = 40;

    private final Deque<String> last = new ArrayDeque<>();
    private final int port;

    private ChildOutput(int port) {
        this.port = port;
    }

    /** Starts reading {@code output}, the child's stdout and stderr, of the broker on {@code port}. */
    static ChildOutput follow(InputStream output, int port) {
        ChildOutput o = new ChildOutput(port);
        Thread t = new Thread(() -> o.read(output), "embedded-kafka-output-" + port);
        t.setDaemon(true);
        t.start();
        return o;
    }

    private void read(InputStream output) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(output, StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                remember(line);
                if (line.startsWith("ERROR")) {
                    log.warn("[kafka:{}] {}", port, line);
                } else if (line.startsWith("WARN")) {
                    log.info("[kafka:{}] {}", port, line);
                } else {
                    log.debug("[kafka:{}] {}", port, line);
                }
            }
        } catch (IOException e) {
            log.debug("Embedded Kafka output closed: {}", e.toString());
        }
    }

    private void remember(String line) {
        synchronized (last) {
            if (last.size() == LINES_KEPT) {
                last.removeFirst();
            }
            last.addLast(line);
        }
    }

    /** Returns the last lines read, oldest first. */
    String lastLines() {
        synchronized (last) {
            return String.join("\n", last);
        }
    }
}
