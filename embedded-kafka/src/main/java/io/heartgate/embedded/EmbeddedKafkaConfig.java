package io.heartgate.embedded;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Configures an {@link EmbeddedKafkaBroker}.
 *
 * @param listenHost the address the broker binds, such as {@code 127.0.0.1} or {@code 0.0.0.0}
 * @param advertisedHost the host clients are told to connect to; must be reachable by every agent
 * @param port the client port; 0 picks a free one
 * @param dataDir where the broker keeps its log; {@code null} uses a temp dir removed on close
 * @param startTimeout how long to wait for the broker to answer before giving up
 * @param maxHeapMiB heap of the broker's JVM
 */
public record EmbeddedKafkaConfig(
        String listenHost,
        String advertisedHost,
        int port,
        Path dataDir,
        Duration startTimeout,
        int maxHeapMiB) {

    /** Checks ranges. */
    public EmbeddedKafkaConfig {
        Objects.requireNonNull(listenHost, "listenHost");
        Objects.requireNonNull(advertisedHost, "advertisedHost");
        Objects.requireNonNull(startTimeout, "startTimeout");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0 to 65535, was " + port);
        }
        if (startTimeout.isNegative() || startTimeout.isZero()) {
            throw new IllegalArgumentException("startTimeout must be positive");
        }
        if (maxHeapMiB < 128) {
            throw new IllegalArgumentException("maxHeapMiB must be at least 128, was " + maxHeapMiB);
        }
    }

    /** Returns the configuration tests use: loopback, a free port, a temp dir, 60 s to start. */
    public static EmbeddedKafkaConfig forTests() {
        return new EmbeddedKafkaConfig("127.0.0.1", "127.0.0.1", 0, null, Duration.ofSeconds(60), 384);
    }

    /** Returns a copy with another client port. */
    public EmbeddedKafkaConfig withPort(int newPort) {
        return new EmbeddedKafkaConfig(listenHost, advertisedHost, newPort, dataDir, startTimeout, maxHeapMiB);
    }

    /** Returns a copy keeping the log in {@code dir} (kept on close). */
    public EmbeddedKafkaConfig withDataDir(Path dir) {
        return new EmbeddedKafkaConfig(listenHost, advertisedHost, port, dir, startTimeout, maxHeapMiB);
    }

    /** Returns a copy that binds {@code listen} and advertises {@code advertised}. */
    public EmbeddedKafkaConfig withHosts(String listen, String advertised) {
        return new EmbeddedKafkaConfig(listen, advertised, port, dataDir, startTimeout, maxHeapMiB);
    }
}
