package io.heartgate.scheduler.admin;

import io.heartgate.scheduler.metrics.ModelSignals;
import io.heartgate.scheduler.replicas.ReplicaView;
import io.heartgate.scheduler.status.DiscoveryView;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.trust.ServerTls;
import io.heartgate.scheduler.usage.TrafficView;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.ServerSSLOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.micrometer.MetricsDomain;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the admin port: {@code /healthz}, {@code /readyz}, {@code /admin/nodes}, {@code /admin/summary}, {@code /admin/models}, Prometheus
 * {@code /metrics}, and the live dashboard at {@code /} fed by server-sent events from
 * {@code /admin/events}. Everything is read from the table's published snapshot and narrow
 * read-only views of discovery, passive health and traffic; nothing here touches the request path.
 */
public final class AdminServer extends VerticleBase {

    private static final Logger log = LoggerFactory.getLogger(AdminServer.class);

    private final String bind;
    private final int port;
    private final NodeTable table;
    private final Supplier<? extends DiscoveryView> discovery;
    private final String strategy;
    private final Clock clock;
    private final EjectionView health;
    private final BooleanSupplier draining;
    private final PrometheusMeterRegistry registry;
    private final TrafficView traffic;
    private final AdminGuard guard;
    private final ServerTls tls;
    private final ReplicaView replicas;
    private final ModelSignals signals;
    private final NodesView view;

    /** What the admin port shows besides the table: the replicas, and each model's load and queue. */
    public record Views(ReplicaView replicas, ModelSignals models) {
    }
    private final Set<HttpServerResponse> watchers = new LinkedHashSet<>();
    private Buffer dashboard;
    private Buffer dashboardScript;
    private HttpServer server;
    private volatile int actualPort = -1;

    /**
     * Creates the server; it listens once deployed.
     *
     * @param strategy the balancing strategy's name, as {@code /admin/nodes} shows it
     * @param draining whether the scheduler is shutting down ({@code /readyz} is then 503)
     * @param guard who may see {@code /admin/*} and the dashboard's data (and the probes, if it says so)
     * @param tls the certificate to serve HTTPS with, or {@code null} for plain HTTP
     * @param views the replicas sharing this gateway ({@code /admin/replicas}) and the models' load ({@code /admin/models})
     */
    public AdminServer(String bind, int port, NodeTable table, Supplier<? extends DiscoveryView> discovery,
                       String strategy, Clock clock, EjectionView health, BooleanSupplier draining,
                       PrometheusMeterRegistry registry, TrafficView traffic, AdminGuard guard, ServerTls tls,
                       Views views) {
        this.guard = guard;
        this.replicas = views.replicas();
        this.signals = views.models();
        this.tls = tls;
        this.health = health;
        this.draining = draining;
        this.registry = registry;
        this.traffic = traffic;
        this.bind = bind;
        this.port = port;
        this.table = table;
        this.discovery = discovery;
        this.strategy = strategy;
        this.clock = clock;
        this.view = new NodesView(health, table.missedHeartbeats(), traffic);
    }

    /**
     * Returns the Vert.x that serves the admin port: Netty's native transport where the platform has
     * it, with the HTTP server's and the JVM's meters in {@code registry} (not the per-socket byte
     * counters, nor the event bus's or verticles').
     */
    public static Vertx vertx(PrometheusMeterRegistry registry) {
        return Vertx.builder()
                .with(new VertxOptions().setPreferNativeTransport(true)
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
    }

    /** Returns the port listened on, or -1 before. */
    public int port() {
        return actualPort;
    }

    @Override
    public Future<?> start() {
        Router router = Router.router(vertx);
        // The dashboard's page is static code: it holds no data, and asks for the token itself.
        router.route("/admin/*").handler(guard);
        if (guard.guardsProbes()) {
            router.route("/healthz").handler(guard);
            router.route("/readyz").handler(guard);
            router.route("/metrics").handler(guard);
        }
        router.get("/healthz").handler(ctx -> json(ctx, 200, new JsonObject().put("status", "ok")));
        router.get("/readyz").handler(this::readyz);
        router.get("/admin/nodes").handler(this::listNodes);
        router.get("/admin/summary").handler(ctx -> json(ctx, 200, view.summary(table.snapshot())));
        router.get("/admin/models").handler(ctx -> json(ctx, 200, ModelsView.of(table.snapshot(), signals.current())));
        router.get("/admin/replicas").handler(ctx -> json(ctx, 200, ReplicasView.of(replicas, clock.instant())));
        router.get("/admin/keys").handler(ctx -> json(ctx, 200, new JsonObject().put("keys", keys())));
        router.get("/metrics").handler(ctx -> ctx.response()
                .putHeader("content-type", "text/plain; version=0.0.4; charset=utf-8")
                .end(registry.scrape()));
        dashboard = Buffer.buffer(resource("/dashboard/index.html"));
        router.get("/").handler(ctx -> ctx.response().putHeader("content-type", "text/html; charset=utf-8")
                .putHeader("cache-control", "no-cache").end(dashboard));
        dashboardScript = Buffer.buffer(resource("/dashboard/dashboard.js"));
        router.get("/dashboard.js").handler(ctx -> ctx.response()
                .putHeader("content-type", "text/javascript; charset=utf-8")
                .putHeader("cache-control", "no-cache").end(dashboardScript));
        router.get("/admin/events").handler(this::events);
        // Live updates: one JSON event a second to every open dashboard (and at once on connect).
        vertx.setPeriodic(1000, id -> broadcast());
        HttpServerOptions options = new HttpServerOptions();
        if (tls != null) {
            options.setSsl(true).setKeyCertOptions(pem(tls)).setUseAlpn(true)
                    .setAlpnVersions(List.of(HttpVersion.HTTP_1_1));
        }
        server = vertx.createHttpServer(options);
        return server.requestHandler(router).listen(port, bind).onSuccess(s -> {
            actualPort = s.actualPort();
            log.info("admin listening on {}:{}", bind, s.actualPort());
        });
    }

    /** Serves {@code renewed} to new connections from now on; open ones keep theirs. */
    public Future<Boolean> updateTls(ServerTls renewed) {
        return server.updateSSLOptions(new ServerSSLOptions().setKeyCertOptions(pem(renewed))
                .setUseAlpn(true).setApplicationLayerProtocols(List.of(HttpVersion.HTTP_1_1.alpnName())));
    }

    private static PemKeyCertOptions pem(ServerTls tls) {
        return new PemKeyCertOptions().setCertValue(Buffer.buffer(tls.certPem())).setKeyValue(Buffer.buffer(tls.keyPem()));
    }

    @Override
    public Future<?> stop() {
        return server == null ? Future.succeededFuture() : server.close();
    }

    private void events(RoutingContext ctx) {
        HttpServerResponse r = ctx.response();
        r.setChunked(true)
                .putHeader("content-type", "text/event-stream")
                .putHeader("cache-control", "no-cache")
                .putHeader("x-accel-buffering", "no");
        watchers.add(r);
        r.closeHandler(v -> watchers.remove(r));
        r.write(event());
    }

    private void broadcast() {
        if (watchers.isEmpty()) {
            return;
        }
        Buffer e = event();
        for (HttpServerResponse r : List.copyOf(watchers)) {
            if (r.closed()) {
                watchers.remove(r);
            } else if (!r.writeQueueFull()) {
                r.write(e);
            }
        }
    }

    /**
     * One dashboard update: the fleet's counts ({@code /admin/summary}) and the scheduler's own
     * state, never the nodes themselves, so an update costs the same at 3 nodes and at 100,000; the
     * dashboard reads the rows it shows as pages of {@code /admin/nodes}.
     */
    private Buffer event() {
        Instant now = clock.instant();
        JsonObject state = new JsonObject().put("strategy", strategy).put("summary", view.summary(table.snapshot()));
        DiscoveryView d = discovery.get();
        double ttfb = traffic.firstByteMedianMs();
        Map<String, Long> affinity = traffic.affinity();
        state.put("time", now.toEpochMilli())
                .put("requests", traffic.totalRequests())
                .put("firstByteMedianMs", Double.isNaN(ttfb) ? null : ttfb)
                .put("kafka", new JsonObject()
                        .put("caughtUp", d.caughtUp())
                        .put("selfPreservation", d.selfPreservation())
                        .put("lag", d.lag())
                        .put("lastContactAgeMs", d.lastContact() == null || d.lastContact().equals(Instant.MIN) ? null
                                : Duration.between(d.lastContact(), now).toMillis()))
                .put("draining", draining.getAsBoolean())
                .put("keys", keys())
                .put("replicas", ReplicasView.of(replicas, now))
                .put("affinity", affinity.isEmpty() ? null : new JsonObject(new LinkedHashMap<>(affinity)));
        return Buffer.buffer("data: " + state.encode() + "\n\n");
    }

    /** Returns the requests and tokens per API key ("" for callers without one), by name. */
    private JsonArray keys() {
        JsonArray keys = new JsonArray();
        traffic.keyTotals().forEach((name, t) -> keys.add(new JsonObject().put("key", name).put("requests", t.requests())
                .put("promptTokens", t.promptTokens()).put("completionTokens", t.completionTokens())));
        return keys;
    }

    private static String resource(String path) {
        try (InputStream in = AdminServer.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void readyz(RoutingContext ctx) {
        DiscoveryView d = discovery.get();
        int routable = table.snapshot().routable().size();
        String reason = null;
        if (draining.getAsBoolean()) {
            reason = "shutting down: draining in-flight requests";
        } else if (d.fatal() != null) {
            reason = "discovery stopped: " + d.fatal();
        } else if (d.refused() != null) {
            reason = "Kafka refuses the scheduler's credentials: " + d.refused();
        } else if (!d.caughtUp()) {
            reason = "catching up with the heartbeat topic";
        } else if (!replicas.isCaughtUp()) {
            reason = "catching up with the events topic";
        } else if (routable == 0) {
            reason = "no routable node";
        }
        JsonObject body = new JsonObject()
                .put("ready", reason == null)
                .put("caughtUp", d.caughtUp())
                .put("selfPreservation", d.selfPreservation())
                .put("routableNodes", routable)
                .put("kafkaLag", d.lag());
        if (d.lastContact() != null && !d.lastContact().equals(Instant.MIN)) {
            body.put("lastKafkaContactAgeMs", Duration.between(d.lastContact(), clock.instant()).toMillis());
        }
        if (d.selfPreservation()) {
            body.put("warning", "Kafka unreachable: expiry frozen, routing to the last known nodes");
        }
        body.put("limits", ReplicasView.limits(replicas));
        if (reason != null) {
            body.put("reason", reason);
        }
        json(ctx, reason == null ? 200 : 503, body);
    }

    /**
     * {@code GET /admin/nodes}: with {@code limit}, one page and the cursor of the next; without,
     * every node the filters keep, streamed ({@link NodeListing}). A bad parameter is a 400 naming it.
     */
    private void listNodes(RoutingContext ctx) {
        NodesView.Query q;
        try {
            q = NodesView.Query.parse(ctx.queryParams());
        } catch (IllegalArgumentException e) {
            json(ctx, 400, new JsonObject().put("error", e.getMessage()));
            return;
        }
        TableSnapshot s = table.snapshot();
        Instant now = clock.instant();
        if (q.limit() == 0) {
            NodeListing.write(ctx.response(), ctx.vertx().getOrCreateContext(), view, s, q, now, strategy);
            return;
        }
        NodesView.Page page = view.page(s, q);
        JsonArray nodes = new JsonArray();
        page.nodes().forEach(n -> nodes.add(view.node(n, now)));
        JsonObject body = new JsonObject().put("nodes", nodes);
        if (page.cursor() != null) {
            body.put("cursor", page.cursor());
        }
        if (page.total() >= 0) {
            body.put("total", page.total());
        }
        json(ctx, 200, body);
    }

    private static void json(RoutingContext ctx, int status, JsonObject body) {
        ctx.response().setStatusCode(status).putHeader("content-type", "application/json; charset=utf-8")
                .putHeader("cache-control", "no-store").end(body.encode());
    }
}
