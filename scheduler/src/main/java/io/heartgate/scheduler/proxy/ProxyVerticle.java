package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.table.NodeTable;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.PoolOptions;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the proxy port on one event loop; the scheduler deploys one instance per core, all on the
 * same port, each with its own pooled keep-alive HTTP client, so a request never leaves its event
 * loop. See {@link Exchange} for what happens to one request.
 *
 * <p>Written on Vert.x core rather than {@code vertx-http-proxy}: that library picks the origin
 * before the body is read and replays nothing, while this proxy must read the {@code model} from a
 * bounded body buffer before it can choose a node, retry the same body on another node when a
 * connect fails or a node resets before answering, count in-flight requests per node, feed passive
 * ejection, and tell a client's hang-up from a node's failure.
 */
public final class ProxyVerticle extends VerticleBase {

    private static final Logger log = LoggerFactory.getLogger(ProxyVerticle.class);

    /** State all instances share; {@code nanoTicker} is the monotonic clock the timeouts use. */
    public record Shared(ProxyConfig config, NodeTable table, Balancer balancer, PassiveHealth health,
                         ProxyStats stats, ProxyMetrics metrics, LongSupplier nanoTicker,
                         Map<String, Target> targets, AtomicBoolean announced, AtomicInteger port) {

        /** Creates the shared state for one proxy. */
        public static Shared of(ProxyConfig config, NodeTable table, Balancer balancer, PassiveHealth health,
                                ProxyStats stats, ProxyMetrics metrics, LongSupplier nanoTicker) {
            return new Shared(config, table, balancer, health, stats, metrics, nanoTicker, new ConcurrentHashMap<>(),
                    new AtomicBoolean(), new AtomicInteger(-1));
        }

        /** Returns the parsed target of a node URL, parsing each URL once. */
        Target target(String url) {
            Target t = targets.get(url);
            if (t == null) {
                if (targets.size() > 100_000) {
                    targets.clear(); // URLs of nodes long gone; they are parsed again if they come back
                }
                t = Target.of(url);
                targets.put(url, t);
            }
            return t;
        }
    }

    private final Shared shared;
    private final int port;
    private HttpServer server;
    private HttpClient client;

    /**
     * Creates one instance over the shared state, listening on {@code port} (the first instance may
     * use 0; the others must then be given the port it got).
     */
    public ProxyVerticle(Shared shared, int port) {
        this.shared = shared;
        this.port = port;
    }

    @Override
    public Future<?> start() {
        ProxyConfig c = shared.config();
        client = vertx.createHttpClient(new HttpClientOptions()
                        .setProtocolVersion(HttpVersion.HTTP_1_1)
                        .setKeepAlive(true)
                        .setKeepAliveTimeout(60)
                        .setPipelining(false)
                        .setTcpNoDelay(true)
                        .setDecompressionSupported(false)
                        .setConnectTimeout((int) c.connectTimeout().toMillis()),
                new PoolOptions().setHttp1MaxSize(1024).setMaxWaitQueueSize(-1));
        server = vertx.createHttpServer(new HttpServerOptions()
                .setTcpNoDelay(true)
                .setCompressionSupported(false)
                .setHandle100ContinueAutomatically(true)
                .setMaxHeaderSize(64 * 1024));
        Timeouts timeouts = new Timeouts(shared.nanoTicker(), c.firstByteTimeout().toMillis(), c.idleTimeout().toMillis());
        vertx.setPeriodic(100, id -> timeouts.sweep());
        server.requestHandler(req -> new Exchange(shared, client, timeouts, req).start());
        return server.listen(port, c.bind()).onSuccess(s -> {
            int previous = shared.port().getAndSet(s.actualPort());
            if (previous != -1 && previous != s.actualPort()) {
                // Instances must share one port; a second one means requests would miss half the loops.
                log.error("Proxy instances listen on different ports ({} and {})", previous, s.actualPort());
            }
            if (shared.announced().compareAndSet(false, true)) {
                // The exact line scripts and tests wait for (CONTRACT.md).
                log.info("proxy listening on {}:{}", c.bind(), s.actualPort());
            }
        });
    }

    @Override
    public Future<?> stop() {
        // Graceful: stop accepting, let in-flight exchanges finish up to the drain timeout.
        Future<Void> closed = server == null ? Future.succeededFuture()
                : server.shutdown(shared.config().drainTimeout().toMillis(), TimeUnit.MILLISECONDS);
        return closed.eventually(() -> client == null ? Future.succeededFuture() : client.close());
    }
}
