package io.heartgate.scheduler.proxy;

import java.time.Duration;

/**
 * Configures the proxy.
 *
 * @param bind address to listen on
 * @param port port (0 = any free port)
 * @param maxBodyBytes largest request body accepted; larger: 413
 * @param retries other nodes tried when a node cannot be reached
 * @param connectTimeout time to open a connection to a node
 * @param firstByteTimeout time from sending a request to the response head; long, for LLM queues
 * @param idleTimeout longest pause between two chunks of a response
 * @param drainTimeout how long in-flight requests may finish on shutdown
 * @param ejectAfter consecutive connect failures that eject a node
 * @param ejectFor first ejection period; doubles with each ejection in a row, up to 5 minutes
 * @param eventLoops proxy event loops (threads)
 * @param transport the event loops' I/O transport; {@link Transport#AUTO} takes the best available
 * @param keepAliveTimeout how long a client connection may sit idle between requests before the
 *     proxy closes it (nginx's {@code keepalive_timeout}, 75 s there too)
 */
public record ProxyConfig(String bind, int port, long maxBodyBytes, int retries, Duration connectTimeout,
                          Duration firstByteTimeout, Duration idleTimeout, Duration drainTimeout, int ejectAfter,
                          Duration ejectFor, int eventLoops, Transport transport,
                          Duration keepAliveTimeout) {

    /** Checks ranges. */
    public ProxyConfig {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("--port must be 0 to 65535, was " + port);
        }
        if (maxBodyBytes < 1024) {
            throw new IllegalArgumentException("--max-body must be at least 1KiB");
        }
        if (retries < 0 || retries > 10) {
            throw new IllegalArgumentException("--retries must be 0 to 10, was " + retries);
        }
        positive("--connect-timeout", connectTimeout);
        positive("--first-byte-timeout", firstByteTimeout);
        positive("--idle-timeout", idleTimeout);
        if (drainTimeout.isNegative()) {
            throw new IllegalArgumentException("--drain-timeout must not be negative");
        }
        if (ejectAfter < 1) {
            throw new IllegalArgumentException("--eject-after must be at least 1, was " + ejectAfter);
        }
        positive("--eject-for", ejectFor);
        if (eventLoops < 1) {
            throw new IllegalArgumentException("event loops must be at least 1");
        }
        if (transport == null) {
            throw new IllegalArgumentException("--transport must be set");
        }
        positive("--keepalive-timeout", keepAliveTimeout);
    }

    private static void positive(String flag, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(flag + " must be positive");
        }
    }

    /** Returns a copy with another first-byte timeout. */
    public ProxyConfig withFirstByteTimeout(Duration d) {
        return new ProxyConfig(bind, port, maxBodyBytes, retries, connectTimeout, d, idleTimeout, drainTimeout,
                ejectAfter, ejectFor, eventLoops, transport, keepAliveTimeout);
    }

    /** Returns a copy with another idle timeout. */
    public ProxyConfig withIdleTimeout(Duration d) {
        return new ProxyConfig(bind, port, maxBodyBytes, retries, connectTimeout, firstByteTimeout, d, drainTimeout,
                ejectAfter, ejectFor, eventLoops, transport, keepAliveTimeout);
    }

    /** Returns a copy with another body limit. */
    public ProxyConfig withMaxBodyBytes(long bytes) {
        return new ProxyConfig(bind, port, bytes, retries, connectTimeout, firstByteTimeout, idleTimeout, drainTimeout,
                ejectAfter, ejectFor, eventLoops, transport, keepAliveTimeout);
    }

    /** Returns a copy with another client keep-alive timeout. */
    public ProxyConfig withKeepAliveTimeout(Duration d) {
        return new ProxyConfig(bind, port, maxBodyBytes, retries, connectTimeout, firstByteTimeout, idleTimeout, drainTimeout,
                ejectAfter, ejectFor, eventLoops, transport, d);
    }

    /** Returns a copy with another transport. */
    public ProxyConfig withTransport(Transport t) {
        return new ProxyConfig(bind, port, maxBodyBytes, retries, connectTimeout, firstByteTimeout, idleTimeout, drainTimeout,
                ejectAfter, ejectFor, eventLoops, t, keepAliveTimeout);
    }

    /** Returns the defaults with the given address, port and retries. */
    public static ProxyConfig defaults(String bind, int port, int retries) {
        return new ProxyConfig(bind, port, 16L * 1024 * 1024, retries, Duration.ofSeconds(2), Duration.ofMinutes(5),
                Duration.ofMinutes(2), Duration.ofSeconds(30), 3, Duration.ofSeconds(10),
                Math.max(1, Runtime.getRuntime().availableProcessors()), Transport.AUTO, Duration.ofSeconds(75));
    }
}
