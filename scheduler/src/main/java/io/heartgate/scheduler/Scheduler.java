package io.heartgate.scheduler;

import io.heartgate.embedded.EmbeddedKafkaBroker;
import io.heartgate.embedded.EmbeddedKafkaConfig;
import io.heartgate.scheduler.admin.AdminServer;
import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.ProxyStats;
import io.heartgate.scheduler.proxy.ProxyVerticle;
import io.heartgate.scheduler.config.SchedulerConfig;
import io.heartgate.scheduler.discovery.DiscoveryStats;
import io.heartgate.scheduler.discovery.DiscoveryStatus;
import io.heartgate.scheduler.discovery.HeartbeatConsumer;
import io.heartgate.scheduler.discovery.TopicSetup;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.metrics.SchedulerMetrics;
import io.heartgate.scheduler.proxy.ProxyMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MetricsDomain;
import io.vertx.micrometer.MicrometerMetricsOptions;
import io.vertx.core.VertxOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wires one scheduler replica: the embedded broker when no Kafka is given, the heartbeat topic,
 * the table and its discovery thread, and the HTTP servers. Used by {@link SchedulerMain} and by
 * tests, which start and stop whole schedulers.
 */
public final class Scheduler implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Scheduler.class);
    /** How soon after a renewal the request path sees new load figures. */
    private static final Duration RENEWAL_PUBLISH_EVERY = Duration.ofMillis(50);

    private final SchedulerConfig config;
    private final EmbeddedKafkaBroker broker;
    private final String bootstrap;
    private final NodeTable table;
    private final DiscoveryStats stats;
    private final HeartbeatConsumer discovery;
    private final Thread discoveryThread;
    private final Vertx vertx;
    private final Vertx proxyVertx;
    private final AdminServer admin;
    private final ProxyVerticle.Shared proxy;
    private final List<String> proxyDeployments;
    private final AtomicBoolean draining;

    private Scheduler(SchedulerConfig config, EmbeddedKafkaBroker broker, String bootstrap, NodeTable table,
                      DiscoveryStats stats, HeartbeatConsumer discovery, Thread discoveryThread, Vertx vertx,
                      Vertx proxyVertx, AdminServer admin, ProxyVerticle.Shared proxy, List<String> proxyDeployments,
                      AtomicBoolean draining) {
        this.config = config;
        this.broker = broker;
        this.bootstrap = bootstrap;
        this.table = table;
        this.stats = stats;
        this.discovery = discovery;
        this.discoveryThread = discoveryThread;
        this.vertx = vertx;
        this.proxyVertx = proxyVertx;
        this.admin = admin;
        this.proxy = proxy;
        this.proxyDeployments = proxyDeployments;
        this.draining = draining;
    }

    /**
     * Starts a replica and returns once its ports listen.
     *
     * @throws IllegalStateException when Kafka, the topic or a port cannot be set up; whatever was
     *     started is stopped again
     */
    public static Scheduler start(SchedulerConfig config, Clock clock) {
        EmbeddedKafkaBroker broker = null;
        Vertx vertx = null;
        Vertx proxyVertx = null;
        HeartbeatConsumer discovery = null;
        try {
            String bootstrap = config.kafka();
            if (bootstrap == null) {
                EmbeddedKafkaConfig kc = new EmbeddedKafkaConfig(listenHost(config.embeddedKafkaHost()),
                        config.embeddedKafkaHost(), config.embeddedKafkaPort(), config.dataDir(),
                        Duration.ofSeconds(60), 512);
                broker = EmbeddedKafkaBroker.start(kc);
                bootstrap = broker.bootstrapServers();
                log.info("kafka bootstrap {}", bootstrap);
                log.info("Embedded Kafka keeps its log in {}; point agents at it with --kafka {}", broker.dataDir(),
                        bootstrap);
            }
            try (Admin kafkaAdmin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000))) {
                TopicSetup.ensure(kafkaAdmin, config.topic(), config.topicPartitions(), 30_000);
            }
            NodeTable table = new NodeTable(clock, config.missedHeartbeats(), RENEWAL_PUBLISH_EVERY);
            DiscoveryStats stats = new DiscoveryStats();
            String clientId = "heartgate-scheduler-" + UUID.randomUUID().toString().substring(0, 8);
            discovery = new HeartbeatConsumer(
                    new KafkaConsumer<>(HeartbeatConsumer.consumerConfig(bootstrap, clientId)),
                    config.topic(), table, clock, config.lookBack(),
                    Duration.ofSeconds(config.missedHeartbeats()), stats);
            Thread thread = new Thread(discovery, "heartgate-discovery");
            thread.setDaemon(true);
            thread.start();

            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            // Netty's native epoll transport when the platform has it: fewer copies and syscalls per request.
            vertx = Vertx.builder()
                    .with(new VertxOptions().setPreferNativeTransport(true)
                            // The admin port's HTTP server meters and the JVM's; the per-socket
                            // byte counters (NET_*) are left off.
                            .setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true)
                                    // Reuse meters instead of looking them up in the registry per request.
                                    .setMeterCacheEnabled(true)
                                    .setJvmMetricsEnabled(true)
                                    .addDisabledMetricsCategory(MetricsDomain.NET_SERVER)
                                    .addDisabledMetricsCategory(MetricsDomain.NET_CLIENT)
                                    .addDisabledMetricsCategory(MetricsDomain.EVENT_BUS)
                                    .addDisabledMetricsCategory(MetricsDomain.DATAGRAM_SOCKET)
                                    .addDisabledMetricsCategory(MetricsDomain.VERTICLES)))
                    .withMetrics(new MicrometerMetricsFactory(registry))
                    .build();
            // The proxy runs on a Vert.x of its own, without the metrics SPI: vertx-micrometer-metrics'
            // per-request HTTP server and client meters cost about 10 us per proxied request (measured
            // on a bare Vert.x proxy: 29 -> 40 us, docs/BENCHMARKS.md), a third more CPU, for figures
            // the proxy's own pre-registered meters (heartgate_proxy_*) already give by node and model.
            proxyVertx = Vertx.builder().with(new VertxOptions().setPreferNativeTransport(true)).build();
            if (!proxyVertx.isNativeTransportEnabled()) {
                log.info("Native transport unavailable ({}); using NIO", proxyVertx.unavailableNativeTransportCause()
                        == null ? "unknown" : proxyVertx.unavailableNativeTransportCause().toString());
            }
            Balancer balancer = config.strategy().create();
            PassiveHealth health = new PassiveHealth(clock, config.proxy().ejectAfter(), config.proxy().ejectFor(),
                    Duration.ofMinutes(5));
            ProxyMetrics proxyMetrics = new ProxyMetrics(registry);
            ProxyVerticle.Shared shared = ProxyVerticle.Shared.of(config.proxy(), table, balancer, health,
                    new ProxyStats(), proxyMetrics, System::nanoTime);
            AtomicBoolean draining = new AtomicBoolean();
            HeartbeatConsumer d = discovery;
            SchedulerMetrics.bind(registry, table, stats, d::status, shared.stats(), health, clock);
            AdminServer admin = new AdminServer(config.bind(), config.adminPort(), table, d::status,
                    config.strategy(), clock, health, draining::get, registry, proxyMetrics);
            vertx.deployVerticle(admin).await(30, TimeUnit.SECONDS);
            // One instance per event loop, all listening on the same port: Vert.x shares one socket
            // among servers asking for the same host and port. It does not do so for port 0 (each
            // instance would get a port of its own), so a free port is chosen here first.
            int proxyPort = config.proxy().port() != 0 ? config.proxy().port() : freePort(config.bind());
            List<String> deployments = new ArrayList<>();
            deployments.add(proxyVertx.deployVerticle(() -> new ProxyVerticle(shared, proxyPort),
                    new io.vertx.core.DeploymentOptions().setInstances(config.proxy().eventLoops()))
                    .await(30, TimeUnit.SECONDS));
            return new Scheduler(config, broker, bootstrap, table, stats, discovery, thread, vertx, proxyVertx, admin,
                    shared, deployments, draining);
        } catch (Exception e) {
            if (discovery != null) {
                discovery.close();
            }
            if (proxyVertx != null) {
                proxyVertx.close();
            }
            if (vertx != null) {
                vertx.close();
            }
            if (broker != null) {
                broker.close();
            }
            throw e instanceof IllegalStateException ise ? ise
                    : new IllegalStateException("scheduler failed to start: " + e.getMessage(), e);
        }
    }

    private static int freePort(String bind) {
        try (java.net.ServerSocket s = new java.net.ServerSocket()) {
            s.bind(new java.net.InetSocketAddress(bind, 0));
            return s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot find a free port on " + bind + ": " + e.getMessage(), e);
        }
    }

    private static String listenHost(String advertised) {
        return "127.0.0.1".equals(advertised) || "localhost".equals(advertised) ? "127.0.0.1" : "0.0.0.0";
    }

    /** Returns the Kafka bootstrap address in use (the embedded broker's when none was given). */
    public String kafkaBootstrap() {
        return bootstrap;
    }

    /** Returns the admin port. */
    public int adminPort() {
        return admin.port();
    }

    /** Returns the proxy port. */
    public int proxyPort() {
        return proxy.port().get();
    }

    /** Returns the proxy's counters. */
    public ProxyStats proxyStats() {
        return proxy.stats();
    }

    /** Returns the passive-health tracker. */
    public PassiveHealth health() {
        return proxy.health();
    }

    /** Returns the table. */
    public NodeTable table() {
        return table;
    }

    /** Returns discovery's counters. */
    public DiscoveryStats stats() {
        return stats;
    }

    /** Returns where discovery stands. */
    public DiscoveryStatus discoveryStatus() {
        return discovery.status();
    }

    /** Returns the configuration. */
    public SchedulerConfig config() {
        return config;
    }

    /**
     * Drains: {@code /readyz} turns 503 and the proxy stops accepting connections, while requests in
     * flight (streams included) finish, up to the drain timeout. Then {@link #close()}.
     */
    public void drain() {
        if (!draining.compareAndSet(false, true)) {
            return;
        }
        log.info("Scheduler draining: /readyz is 503, no new connections, in-flight requests get up to {} ms",
                config.proxy().drainTimeout().toMillis());
        for (String id : proxyDeployments) {
            try {
                proxyVertx.undeploy(id).await(config.proxy().drainTimeout().toMillis() + 5_000, TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                log.warn("Proxy did not drain cleanly: {}", e.toString());
            }
        }
    }

    /** Stops the HTTP servers, discovery and the embedded broker, in that order. */
    @Override
    public void close() {
        try {
            proxyVertx.close().await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            log.warn("Proxy did not close cleanly: {}", e.toString());
        }
        try {
            vertx.close().await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            log.warn("HTTP servers did not close cleanly: {}", e.toString());
        }
        discovery.close();
        try {
            discoveryThread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (broker != null) {
            broker.close();
        }
    }
}
