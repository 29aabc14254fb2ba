package io.heartgate.scheduler.admin;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Load;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.discovery.DiscoveryStatus;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.table.TableSnapshot;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the admin port: {@code /healthz}, {@code /readyz} and {@code /admin/nodes}, read straight
 * from the table's published snapshot.
 */
public final class AdminServer extends VerticleBase {

    private static final Logger log = LoggerFactory.getLogger(AdminServer.class);

    private final String bind;
    private final int port;
    private final NodeTable table;
    private final Supplier<DiscoveryStatus> discovery;
    private final Strategy strategy;
    private final Clock clock;
    private final PassiveHealth health;
    private final java.util.function.BooleanSupplier draining;
    private HttpServer server;
    private volatile int actualPort = -1;

    /** Creates the server; it listens once deployed. */
    public AdminServer(String bind, int port, NodeTable table, Supplier<DiscoveryStatus> discovery, Strategy strategy,
                       Clock clock, PassiveHealth health, java.util.function.BooleanSupplier draining) {
        this.health = health;
        this.draining = draining;
        this.bind = bind;
        this.port = port;
        this.table = table;
        this.discovery = discovery;
        this.strategy = strategy;
        this.clock = clock;
    }

    /** Returns the port listened on, or -1 before. */
    public int port() {
        return actualPort;
    }

    @Override
    public Future<?> start() {
        Router router = Router.router(vertx);
        router.get("/healthz").handler(ctx -> json(ctx, 200, new JsonObject().put("status", "ok")));
        router.get("/readyz").handler(this::readyz);
        router.get("/admin/nodes").handler(ctx -> json(ctx, 200, nodes(table.snapshot(), clock.instant())));
        server = vertx.createHttpServer();
        return server.requestHandler(router).listen(port, bind).onSuccess(s -> {
            actualPort = s.actualPort();
            log.info("admin listening on {}:{}", bind, s.actualPort());
        });
    }

    @Override
    public Future<?> stop() {
        return server == null ? Future.succeededFuture() : server.close();
    }

    private void readyz(RoutingContext ctx) {
        DiscoveryStatus d = discovery.get();
        int routable = table.snapshot().routable().size();
        String reason = null;
        if (draining.getAsBoolean()) {
            reason = "shutting down: draining in-flight requests";
        } else if (d.fatal() != null) {
            reason = "discovery stopped: " + d.fatal();
        } else if (!d.caughtUp()) {
            reason = "catching up with the heartbeat topic";
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
        if (reason != null) {
            body.put("reason", reason);
        }
        json(ctx, reason == null ? 200 : 503, body);
    }

    JsonObject nodes(TableSnapshot s, Instant now) {
        JsonArray nodes = new JsonArray();
        for (Node n : s.nodes()) {
            var hb = n.heartbeat();
            JsonObject o = new JsonObject()
                    .put("nodeId", n.id())
                    .put("url", n.url())
                    .put("state", n.state().name())
                    .put("weight", n.weight())
                    .put("models", new JsonArray(hb.models()))
                    .put("routable", n.routable() && !health.isEjected(n.id()))
                    .put("lastHeartbeatAgeMs", Math.max(0, Duration.between(n.lastSeen(), now).toMillis()))
                    .put("inFlight", n.inFlight().get())
                    .put("load", load(hb.load()))
                    .put("backend", hb.backend())
                    .put("intervalMs", hb.intervalMs())
                    .put("expiresInMs", Duration.between(now, n.expiresAt(table.missedHeartbeats())).toMillis())
                    .put("instance", hb.instance())
                    .put("seq", hb.seq())
                    .put("gpus", gpus(hb.gpus()));
            var ejection = health.ejection(n.id());
            if (!n.routable()) {
                o.put("notRoutableReason", "state " + n.state().name());
            } else if (ejection.isPresent()) {
                o.put("notRoutableReason", "ejected: " + ejection.get().consecutiveFailures()
                        + " consecutive connect failures (" + ejection.get().reason() + ")");
            }
            o.put("ejected", ejection.isPresent());
            ejection.ifPresent(e -> o.put("ejectedForMs", Duration.between(now, e.until()).toMillis()));
            nodes.add(o);
        }
        return new JsonObject().put("strategy", strategy.label()).put("nodes", nodes);
    }

    private static JsonObject load(Load load) {
        JsonObject o = new JsonObject();
        if (load.inFlight() != null) {
            o.put("inFlight", load.inFlight());
        }
        if (load.queued() != null) {
            o.put("queued", load.queued());
        }
        if (load.kvCacheUsage() != null) {
            o.put("kvCacheUsage", load.kvCacheUsage());
        }
        return o;
    }

    private static JsonArray gpus(java.util.List<Gpu> gpus) {
        JsonArray a = new JsonArray();
        for (Gpu g : gpus) {
            a.add(new JsonObject().put("name", g.name()).put("utilization", g.utilization())
                    .put("memoryUsedMiB", g.memoryUsedMiB()).put("memoryTotalMiB", g.memoryTotalMiB()));
        }
        return a;
    }

    private static void json(RoutingContext ctx, int status, JsonObject body) {
        ctx.response().setStatusCode(status).putHeader("content-type", "application/json; charset=utf-8")
                .putHeader("cache-control", "no-store").end(body.encode());
    }
}
