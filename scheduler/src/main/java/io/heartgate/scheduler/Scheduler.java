package io.heartgate.scheduler;

import io.heartgate.embedded.EmbeddedKafkaBroker;
import io.heartgate.embedded.EmbeddedKafkaConfig;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.protocol.signing.HeartbeatVerifier;
import io.heartgate.scheduler.admin.AdminGuard;
import io.heartgate.scheduler.admin.AdminServer;
import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.balancer.KeyHomes;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.discovery.DiscoveryConsumerConfig;
import io.heartgate.scheduler.discovery.DiscoveryNotes;
import io.heartgate.scheduler.discovery.DiscoveryStats;
import io.heartgate.scheduler.discovery.DiscoveryStatus;
import io.heartgate.scheduler.discovery.HeartbeatConsumer;
import io.heartgate.scheduler.discovery.TopicSetup;
import io.heartgate.scheduler.health.FlapDamping;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.health.SlowStart;
import io.heartgate.scheduler.metrics.ModelSignals;
import io.heartgate.scheduler.metrics.SchedulerMetrics;
import io.heartgate.scheduler.proxy.ProxyCounters;
import io.heartgate.scheduler.proxy.ProxyServer;
import io.heartgate.scheduler.proxy.RequestMetrics;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.replicas.GatewayEvents;
import io.heartgate.scheduler.replicas.ReplicaView;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.status.Ramp;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.OtelTracing;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.scheduler.trust.KafkaUsers;
import io.heartgate.scheduler.trust.Reloader;
import io.heartgate.scheduler.trust.Reloading;
import io.heartgate.scheduler.trust.SecretFile;
import io.heartgate.scheduler.trust.ServerTls;
import io.heartgate.scheduler.trust.UpstreamKey;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
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
    /** How often files that may change (API keys, certificates) are read again. */
    private static final Duration RELOAD_EVERY = Duration.ofSeconds(1);
    /** The shortest admin token accepted: a short one could be guessed over the network. */
    static final int ADMIN_TOKEN_MIN = 16;

    private final SchedulerConfig config;
    private final EmbeddedKafkaBroker broker;
    private final String bootstrap;
    private final NodeTable table;
    private final DiscoveryStats stats;
    private final HeartbeatConsumer discovery;
    private final Thread discoveryThread;
    private final Vertx vertx;
    private final AdminServer admin;
    private final ProxyServer proxyServer;
    private final ProxyCounters proxyCounters;
    private final PassiveHealth health;
    private final Draining draining;
    private final Reloader reloader;
    private final KafkaSettings kafkaClient;
    private final GatewayEvents events;

    private Scheduler(SchedulerConfig config, EmbeddedKafkaBroker broker, String bootstrap, NodeTable table,
                      DiscoveryStats stats, HeartbeatConsumer discovery, Thread discoveryThread, Vertx vertx,
                      AdminServer admin, ProxyServer proxyServer, ProxyCounters proxyCounters, PassiveHealth health,
                      Draining draining, Reloader reloader, KafkaSettings kafkaClient, GatewayEvents events) {
        this.kafkaClient = kafkaClient;
        this.events = events;
        this.config = config;
        this.broker = broker;
        this.bootstrap = bootstrap;
        this.table = table;
        this.stats = stats;
        this.discovery = discovery;
        this.discoveryThread = discoveryThread;
        this.vertx = vertx;
        this.admin = admin;
        this.proxyServer = proxyServer;
        this.proxyCounters = proxyCounters;
        this.health = health;
        this.draining = draining;
        this.reloader = reloader;
    }

    /**
     * Starts a replica and returns once its ports listen.
     *
     * @throws IllegalStateException when Kafka, the topic or a port cannot be set up; whatever was
     *     started is stopped again
     */
    public static Scheduler start(SchedulerConfig config, Clock clock) {
        // Read before anything starts: a bad file stops the scheduler with its setting's name.
        Reloading<ApiKeys> apiKeys = config.security().apiKeys() == null ? null
                : Reloading.load("API keys", "apiKeys", List.of(config.security().apiKeys()),
                        files -> ApiKeys.parse(new String(files.get(0), StandardCharsets.UTF_8)));
        UpstreamKey upstreamKey = config.security().upstreamApiKey() == null ? null
                : UpstreamKey.load(config.security().upstreamApiKey());
        AdminGuard adminGuard = config.security().adminToken() == null ? AdminGuard.OPEN
                : AdminGuard.of(SecretFile.read(config.security().adminToken(), "adminToken", ADMIN_TOKEN_MIN),
                        config.security().adminTokenAll());
        Reloading<ServerTls> tls = config.security().tlsCert() == null ? null
                : Reloading.load("TLS certificate", "tlsCert",
                        List.of(config.security().tlsCert(), config.security().tlsKey()), ServerTls::parse);
        HeartbeatKeys heartbeatKeys = config.security().heartbeatKeys() == null ? null
                : HeartbeatKeys.load(config.security().heartbeatKeys());
        HeartbeatVerifier verifier = heartbeatKeys == null ? null : new HeartbeatVerifier(heartbeatKeys);
        Map<String, String> kafkaUsers = config.kafka() != null || config.security().embeddedKafkaUsers() == null ? null
                : KafkaUsers.load(config.security().embeddedKafkaUsers());
        Reloader reloader = new Reloader(RELOAD_EVERY);
        EmbeddedKafkaBroker broker = null;
        Vertx vertx = null;
        HeartbeatConsumer discovery = null;
        GatewayEvents events = null;
        ProxyServer proxyServer = null;
        try {
            String bootstrap = config.kafka();
            KafkaSettings kafkaClient = config.security().kafkaClient();
            if (bootstrap == null) {
                EmbeddedKafkaConfig kc = new EmbeddedKafkaConfig(listenHost(config.embeddedKafkaHost()),
                        config.embeddedKafkaHost(), config.embeddedKafkaPort(), config.dataDir(),
                        Duration.ofSeconds(60), 512);
                Map<String, String> users = kafkaUsers;
                if (users != null) {
                    kc = kc.withSecurity(EmbeddedKafkaConfig.Security.selfSigned(users));
                }
                broker = EmbeddedKafkaBroker.start(kc);
                bootstrap = broker.bootstrapServers();
                log.info("kafka bootstrap {}", bootstrap);
                log.info("Embedded Kafka keeps its log in {}; point agents at it with --kafka {}", broker.dataDir(),
                        bootstrap);
                if (users != null) {
                    Map.Entry<String, String> own = users.entrySet().iterator().next();
                    kafkaClient = KafkaSettings.of(broker.clientProperties(own.getKey(), own.getValue(), "SCRAM-SHA-512"));
                    log.info("Embedded Kafka speaks SASL_SSL only: agents need --kafka-config with "
                            + "security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512 (or -256), a user of {} in "
                            + "sasl.jaas.config, ssl.truststore.type=PEM and ssl.truststore.location={}",
                            config.security().embeddedKafkaUsers(), broker.certificatePem().orElseThrow());
                }
            }
            if (!kafkaClient.isEmpty()) {
                log.info("Kafka client properties: {}", kafkaClient.summary());
            }
            TopicSetup.ensure(bootstrap, kafkaClient, config.topic(), config.topicPartitions());
            events = new GatewayEvents(GatewayEvents.replicaId(), config.eventsTopic(), bootstrap, kafkaClient, heartbeatKeys, clock);
            NodeTable table = new NodeTable(clock, config.missedHeartbeats(), RENEWAL_PUBLISH_EVERY);
            DiscoveryStats stats = new DiscoveryStats();
            String clientId = "heartgate-scheduler-" + UUID.randomUUID().toString().substring(0, 8);
            discovery = new HeartbeatConsumer(
                    new KafkaConsumer<>(DiscoveryConsumerConfig.consumerConfig(bootstrap, clientId, kafkaClient)),
                    config.topic(), table, clock, config.lookBack(),
                    Duration.ofSeconds(config.missedHeartbeats()), stats, config.proxy().allowUpstream(), verifier);
            discovery.restartPoints(events::restartPoint);
            DiscoveryNotes.log(config.topic(), verifier, config.proxy().allowUpstream());
            Thread thread = new Thread(discovery, "heartgate-discovery");
            thread.setDaemon(true);
            thread.start();

            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            vertx = AdminServer.vertx(registry);
            KeyHomes homes = config.strategy() == Strategy.AFFINITY ? config.affinity().homes() : null;
            Balancer balancer = config.strategy() == Strategy.AFFINITY ? config.affinity().balancer(Ticker.SYSTEM, homes)
                    : config.strategy().create();
            RateLimits limits = new RateLimits(Ticker.SYSTEM, events.usage(), events.shares());
            PassiveHealth health = new PassiveHealth(clock, config.proxy().ejectAfter(), config.proxy().ejectFor(),
                    Duration.ofMinutes(5));
            FlapDamping flaps = new FlapDamping(clock, config.resilience().flapLimit(), config.resilience().flapWindow());
            table.addListener(flaps);
            table.addListener(health);
            EjectionView routing = EjectionView.either(health, flaps);
            RequestMetrics requestMetrics = new RequestMetrics(registry, Ticker.SYSTEM);
            ProxyCounters counters = new ProxyCounters();
            counters.bindTo(registry);
            HeartbeatConsumer d = discovery;
            events.shareDiscovery(d::ownRestartPoint);
            events.shareFlapHolds(flaps);
            SchedulerMetrics.bind(registry, table, stats, d::status, health, clock);
            Draining draining = new Draining();
            AtomicReference<ProxyServer> proxy = new AtomicReference<>();
            ModelSignals signals = new ModelSignals(table::snapshot,
                    () -> proxy.get() == null ? Map.of() : proxy.get().queueByModel());
            AdminServer admin = new AdminServer(config.bind(), config.adminPort(), table, d::status,
                    config.strategy().label(), clock, routing, draining, registry, requestMetrics, adminGuard,
                    tls == null ? null : tls.get(), new AdminServer.Views(events.view(), signals));
            if (!adminGuard.enabled() && !isLoopback(config.bind())) {
                log.warn("Admin port {}:{} has no --admin-token: anyone who reaches it sees the fleet (/admin/nodes, "
                        + "the dashboard); set --admin-token or bind to 127.0.0.1", config.bind(), config.adminPort());
            }
            vertx.deployVerticle(admin).await(30, TimeUnit.SECONDS);
            // The proxy is served by Netty directly, not by Vert.x (docs/BENCHMARKS.md), and so does
            // not carry vertx-micrometer-metrics' per-request meters either: its own pre-registered
            // heartgate_proxy_* meters give the figures by node and model.
            if (apiKeys != null) {
                reloader.watch(apiKeys);
                log.info("Proxy callers need an API key: {} keys from {}, reloaded when the file changes",
                        apiKeys.get().size(), config.security().apiKeys());
            }
            if (upstreamKey != null) {
                log.info("Nodes get the key of {} as Authorization: Bearer", config.security().upstreamApiKey());
            }
            RouteSelector selector = routeSelector(config, clock, table, balancer);
            proxyServer = ProxyServer.start(config.proxy(), table::snapshot, selector,
                    health, routing, counters, requestMetrics, Ticker.SYSTEM, draining,
                    new Stages.Access(apiKeys, upstreamKey, tls != null, config.proxy().allowModelManagement(),
                            config.proxy().forceUsage(), limits), tls, OtelTracing.start(config.tracing(), Ticker.SYSTEM));
            proxyServer.bindTo(registry);
            proxy.set(proxyServer);
            signals.bindTo(registry);
            vertx.setPeriodic(1000, id -> signals.refresh());
            events.start(GatewayEvents.advertised(config.bind()) + ":" + proxyServer.port(), proxyServer::queueDepth, limits, apiKeys,
                    health, homes, selector.responses(), Ticker.SYSTEM);
            events.bindTo(registry);
            if (tls != null) {
                reloader.watch(tls).onChange(renewed -> admin.updateTls(renewed).onFailure(e ->
                        log.warn("The admin port kept its old certificate: {}", e.toString())));
            }
            return new Scheduler(config, broker, bootstrap, table, stats, discovery, thread, vertx, admin,
                    proxyServer, counters, health, draining, reloader, kafkaClient, events);
        } catch (Exception e) {
            reloader.close();
            if (proxyServer != null) {
                proxyServer.close();
            }
            if (events != null) {
                events.close();
            }
            if (discovery != null) {
                discovery.close();
            }
            if (vertx != null) {
                vertx.close();
            }
            if (broker != null) {
                broker.close();
            }
            if (e instanceof InvalidSettingException ise) {
                throw ise;
            }
            throw e instanceof IllegalStateException ise ? ise
                    : new IllegalStateException("scheduler failed to start: " + e.getMessage(), e);
        }
    }

    /** Builds the route selector: the strategy, with slow start and warm first as configured. */
    private static RouteSelector routeSelector(SchedulerConfig config, Clock clock, NodeTable table, Balancer balancer) {
        Ramp ramp = Ramp.NONE;
        if (!config.resilience().slowStart().isZero()) {
            SlowStart slowStart = new SlowStart(clock, config.resilience().slowStart());
            table.addListener(slowStart);
            ramp = slowStart;
        }
        if (config.warmFirst().enabled()) {
            log.info("Warm first: requests go to nodes holding their model in memory, unless those have more "
                    + "than {} requests more in flight than the least busy other (--warm-max-load)",
                    config.warmFirst().maxLoad());
        }
        if (config.strategy() == Strategy.AFFINITY) {
            log.info("Affinity: keys from {} (prefix: the first {} characters), load factor {}, requests without a key "
                    + "by {}", config.affinity().keys().sources(), config.affinity().keys().prefixChars(),
                    config.affinity().loadFactor(), config.affinity().fallback().label());
        }
        return new RouteSelector(balancer, ramp, () -> ThreadLocalRandom.current().nextDouble(), config.warmFirst(), clock,
                config.affinity().keys());
    }

    /** Returns the replicas sharing this gateway and whether the events topic is reachable. */
    public ReplicaView replicas() {
        return events.view();
    }

    private static boolean isLoopback(String bind) {
        try {
            return InetAddress.getByName(bind).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }

    private static String listenHost(String advertised) {
        return "127.0.0.1".equals(advertised) || "localhost".equals(advertised) ? "127.0.0.1" : "0.0.0.0";
    }

    /** Returns the Kafka client properties in use (the embedded broker's own with --embedded-kafka-users). */
    public KafkaSettings kafkaClient() {
        return kafkaClient;
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
        return proxyServer.port();
    }

    /** Returns the proxy's counters. */
    public ProxyCounters proxyCounters() {
        return proxyCounters;
    }

    /** Returns the passive-health tracker. */
    public PassiveHealth health() {
        return health;
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
        if (!draining.begin()) {
            return;
        }
        log.info("Scheduler draining: /readyz is 503, no new connections, in-flight requests get up to {} ms",
                config.proxy().drainTimeout().toMillis());
        proxyServer.drain(config.proxy().drainTimeout());
    }

    /** Stops the HTTP servers, discovery and the embedded broker, in that order. */
    @Override
    public void close() {
        reloader.close();
        proxyServer.close();
        events.close();
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
