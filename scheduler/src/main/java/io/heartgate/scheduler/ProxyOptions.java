package io.heartgate.scheduler;

import io.heartgate.protocol.InvalidSettingException;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The scheduler's flags for the proxy's own limits: body size, timeouts toward nodes and clients,
 * connections, its I/O threads, draining, and when a failing node is held out. A picocli mixin of
 * {@link SchedulerMain}; the proxy configuration validates the values.
 */
final class ProxyOptions {

    @Option(names = "--max-body", paramLabel = "SIZE", defaultValue = "${env:SCHEDULER_MAX_BODY:-16MiB}", converter = SizeConverter.class,
            description = {"largest request body; larger: 413 [env SCHEDULER_MAX_BODY] (default: 16MiB)",
                "Accepted: at least `1KiB`"})
    long maxBody;

    @Option(names = "--connect-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_CONNECT_TIMEOUT:-2s}",
            description = {"time to connect to a node [env SCHEDULER_CONNECT_TIMEOUT] (default: 2s)",
                "Accepted: positive"})
    Duration connectTimeout;

    @Option(names = "--first-byte-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_FIRST_BYTE_TIMEOUT:-5m}",
            description = {"time from sending a request to the node's response head; then 504, no retry [env "
                    + "SCHEDULER_FIRST_BYTE_TIMEOUT] (default: 5m)",
                "Accepted: positive"})
    Duration firstByteTimeout;

    @Option(names = "--stall-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_STALL_TIMEOUT:-30s}",
            description = {"a node that sent nothing (no head, no chunk) for `D` while a streaming request "
                    + "waited on it that long for its first token, and while another node serving that request's "
                    + "model answered in that time or had nothing in flight, is ejected as stalled (`--eject-for`, "
                    + "doubling; a non-streaming request is no evidence: its answer comes whole; of a repeated "
                    + "top-level `stream`, the last counts, as the servers read it) and its waiting requests are "
                    + "rescued; checked once a second [env SCHEDULER_STALL_TIMEOUT] (default: 30s)",
                "Accepted: `0` (off), or `1s` to `24h`"})
    Duration stallTimeout;

    @Option(names = "--idle-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_IDLE_TIMEOUT:-2m}",
            description = {"longest pause between two chunks of a response [env SCHEDULER_IDLE_TIMEOUT] "
                    + "(default: 2m)",
                "Accepted: positive"})
    Duration idleTimeout;

    @Option(names = "--keepalive-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_KEEPALIVE_TIMEOUT:-75s}",
            description = {"how long a client connection may sit idle between requests; a response in "
                    + "progress never counts as idle [env SCHEDULER_KEEPALIVE_TIMEOUT] (default: 75s)",
                "Accepted: positive"})
    Duration keepAliveTimeout;

    @Option(names = "--header-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_HEADER_TIMEOUT:-10s}",
            description = {"how long a client may take to send a request head, from its first byte; then 408 "
                    + "`request_timeout` and the connection closes [env SCHEDULER_HEADER_TIMEOUT] (default: 10s)",
                "Accepted: positive"})
    Duration headerTimeout;

    @Option(names = "--body-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_BODY_TIMEOUT:-60s}",
            description = {"how long a client may take to send a request body, from the end of its head; "
                    + "then 408 `request_timeout` and the connection closes [env SCHEDULER_BODY_TIMEOUT] (default: "
                    + "60s)",
                "Accepted: positive"})
    Duration bodyTimeout;

    @Option(names = "--max-connections", paramLabel = "N", defaultValue = "${env:SCHEDULER_MAX_CONNECTIONS:-10000}",
            description = {"client connections held at once; one more is closed on accept "
                    + "(`heartgate_proxy_refused_connections_total`) [env SCHEDULER_MAX_CONNECTIONS] (default: "
                    + "10000)",
                "Accepted: 1 to 1000000"})
    int maxConnections;

    @Option(names = "--event-loops", paramLabel = "N", defaultValue = "${env:SCHEDULER_EVENT_LOOPS:-0}",
            description = {"the proxy's I/O threads; `0`: one per core the JVM sees (its CPU quota in a "
                    + "container). Fewer than the cores where the gateway shares them with other busy work: two "
                    + "loops given one core between them wake twice as often for the same requests "
                    + "[env SCHEDULER_EVENT_LOOPS] (default: 0)",
                "Accepted: 0 to 1024"})
    int eventLoops;

    /** The event loops to run: {@code --event-loops}, or one per core the JVM sees when it is 0. */
    int eventLoops(int cores) {
        if (eventLoops < 0 || eventLoops > 1024) {
            throw new InvalidSettingException("eventLoops", "must be 0 (one per core) to 1024, was " + eventLoops);
        }
        return eventLoops == 0 ? Math.max(1, cores) : eventLoops;
    }

    @Option(names = "--allow-model-management", defaultValue = "${env:SCHEDULER_ALLOW_MODEL_MANAGEMENT:-false}",
            description = {"Ollama's `/api/pull`, `/api/delete`, `/api/create`, `/api/copy`, `/api/push` go "
                    + "to the node their `X-Heartgate-Node` header names (never retried elsewhere, not counted in "
                    + "flight against the node's capacity; no header: 400, unknown node: 404 `node_not_found`); "
                    + "off, they get 405 `management_disabled` [env SCHEDULER_ALLOW_MODEL_MANAGEMENT] (default: "
                    + "false)",
                "Accepted: flag"})
    boolean allowModelManagement;

    @Option(names = "--drain-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_DRAIN_TIMEOUT:-30s}",
            description = {"how long in-flight requests may finish after SIGTERM [env "
                    + "SCHEDULER_DRAIN_TIMEOUT] (default: 30s)",
                "Accepted: 0 or more"})
    Duration drainTimeout;

    @Option(names = "--eject-after", paramLabel = "N", defaultValue = "${env:SCHEDULER_EJECT_AFTER:-3}",
            description = {"consecutive connect failures that eject a node [env SCHEDULER_EJECT_AFTER] "
                    + "(default: 3)",
                "Accepted: at least 1"})
    int ejectAfter;

    @Option(names = "--eject-for", paramLabel = "D", defaultValue = "${env:SCHEDULER_EJECT_FOR:-10s}",
            description = {"first ejection; doubles per ejection in a row, up to 5 minutes [env "
                    + "SCHEDULER_EJECT_FOR] (default: 10s)",
                "Accepted: positive"})
    Duration ejectFor;
}
