package io.heartgate.scheduler;

import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads what the tests' child processes print: the port a "listening on" line names. */
final class ProcessLogs {

    private ProcessLogs() {
    }

    /** Waits up to 90 s for {@code regex} (its group 1 the port) in {@code log}; returns the port. */
    static int port(Path log, String regex) {
        Pattern pattern = Pattern.compile(regex);
        int[] port = {-1};
        await().atMost(Duration.ofSeconds(90)).until(() -> {
            Matcher m = pattern.matcher(Files.exists(log) ? Files.readString(log) : "");
            if (m.find()) {
                port[0] = Integer.parseInt(m.group(1));
                return true;
            }
            return false;
        });
        return port[0];
    }
}
