package io.heartgate.agent;

import com.sun.net.httpserver.HttpServer;
import io.heartgate.agent.publish.HeartbeatPublisher;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the agent's own Prometheus metrics on {@code --metrics-port}: probe latency and failures,
 * heartbeats published, failed and dropped, and the age of the last acknowledged heartbeat. The
 * JDK's built-in HTTP server is enough for one scrape every few seconds, and keeps the agent free of
 * a web framework.
 */
public final class AgentMetrics implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(AgentMetrics.class);

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Timer probes;
    private final Counter probeFailures;
    private HttpServer server;

    /** Creates the meters. */
    public AgentMetrics() {
        probes = Timer.builder("heartgate_agent_probe_duration").description("Time one probe of the inference server took")
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofSeconds(60)).register(registry);
        probeFailures = Counter.builder("heartgate_agent_probe_failures")
                .description("Probes that found the inference server unhealthy").register(registry);
    }

    /** Returns the probe timer. */
    Timer probes() {
        return probes;
    }

    /** Counts a probe that found the server unhealthy. */
    void probeFailed() {
        probeFailures.increment();
    }

    /** Binds the publisher's counters. */
    void bind(HeartbeatPublisher publisher, Clock clock) {
        FunctionCounter.builder("heartgate_agent_heartbeats_published", publisher, HeartbeatPublisher::sentCount)
                .description("Heartbeats Kafka acknowledged").register(registry);
        FunctionCounter.builder("heartgate_agent_publish_failures", publisher, HeartbeatPublisher::failedCount)
                .description("Heartbeats Kafka did not acknowledge in time").register(registry);
        FunctionCounter.builder("heartgate_agent_heartbeats_dropped", publisher, HeartbeatPublisher::skippedCount)
                .description("Heartbeats dropped because the previous one was still in flight").register(registry);
        Gauge.builder("heartgate_agent_last_publish_age", publisher, p -> {
            Instant last = p.lastAcknowledged();
            return last == null ? Double.NaN : Duration.between(last, clock.instant()).toMillis() / 1000.0;
        }).description("Seconds since Kafka last acknowledged a heartbeat").baseUnit("seconds").register(registry);
    }

    /** Serves {@code /metrics} on {@code port} (0 = any free port); returns the port. */
    int serve(String host, int port) throws IOException {
        server = HttpServer.create(new InetSocketAddress(host, port), 16);
        server.createContext("/metrics", exchange -> {
            byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("content-type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "agent-metrics");
            t.setDaemon(true);
            return t;
        }));
        server.start();
        log.info("agent metrics listening on {}:{}", host, server.getAddress().getPort());
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        if (server != null) {
            server.stop(0);
        }
    }
}
