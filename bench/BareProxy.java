import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.micrometer.MetricsDomain;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The least a Vert.x 5 proxy can do, as a yardstick for the scheduler's proxy in bench/variants.sh:
 * port 19080, round robin over the sims on 19001-19003, body read whole, headers passed as they are,
 * no retries, timeouts, model routing or health. -Dbare.vertxMeters=true adds vertx-micrometer-metrics
 * configured as the scheduler's admin Vert.x is; -Dbare.timers=true records three Micrometer timers
 * per request like the scheduler's own meters. Not part of the build: bench/variants.sh compiles it.
 */
public final class BareProxy extends VerticleBase {

    private static final int[] PORTS = {19001, 19002, 19003};
    private static final AtomicInteger NEXT = new AtomicInteger();
    private static final PrometheusMeterRegistry REGISTRY = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private static final boolean TIMERS = Boolean.getBoolean("bare.timers");
    private static final Timer DURATION = histogram("bare_duration", "node", "n", "status_class", "2xx", "model", "m");
    private static final Timer FIRST_BYTE = histogram("bare_first_byte", "node", "n", "model", "m");
    private static final Timer MEDIAN = Timer.builder("bare_median").publishPercentiles(0.5, 0.99)
            .distributionStatisticExpiry(Duration.ofSeconds(30)).distributionStatisticBufferLength(3).register(REGISTRY);

    private HttpClient client;

    private static Timer histogram(String name, String... tags) {
        return Timer.builder(name).tags(tags).publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10)).register(REGISTRY);
    }

    @Override
    public Future<?> start() {
        client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true),
                new PoolOptions().setHttp1MaxSize(1024));
        return vertx.createHttpServer(new HttpServerOptions().setTcpNoDelay(true)).requestHandler(req -> {
            long start = System.nanoTime();
            req.body().onSuccess(body -> client.request(new RequestOptions().setMethod(req.method())
                            .setHost("127.0.0.1").setPort(PORTS[Math.floorMod(NEXT.getAndIncrement(), PORTS.length)])
                            .setURI(req.uri()).setHeaders(req.headers()))
                    .compose(up -> up.send(body))
                    .onSuccess(response -> {
                        HttpServerResponse out = req.response().setStatusCode(response.statusCode());
                        out.headers().addAll(response.headers());
                        response.handler(out::write);
                        response.endHandler(v -> {
                            out.end();
                            if (TIMERS) {
                                long d = System.nanoTime() - start;
                                DURATION.record(d, TimeUnit.NANOSECONDS);
                                FIRST_BYTE.record(d, TimeUnit.NANOSECONDS);
                                MEDIAN.record(d, TimeUnit.NANOSECONDS);
                            }
                        });
                    })
                    .onFailure(e -> req.response().setStatusCode(502).end()));
        }).listen(19080, "127.0.0.1");
    }

    public static void main(String[] args) {
        VertxOptions options = new VertxOptions().setPreferNativeTransport(true);
        Vertx vertx;
        if (Boolean.getBoolean("bare.vertxMeters")) {
            options.setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true).setMeterCacheEnabled(true)
                    .setJvmMetricsEnabled(true)
                    .addDisabledMetricsCategory(MetricsDomain.NET_SERVER).addDisabledMetricsCategory(MetricsDomain.NET_CLIENT)
                    .addDisabledMetricsCategory(MetricsDomain.EVENT_BUS).addDisabledMetricsCategory(MetricsDomain.DATAGRAM_SOCKET)
                    .addDisabledMetricsCategory(MetricsDomain.VERTICLES));
            vertx = Vertx.builder().with(options).withMetrics(new MicrometerMetricsFactory(REGISTRY)).build();
        } else {
            vertx = Vertx.vertx(options);
        }
        vertx.deployVerticle(BareProxy::new, new DeploymentOptions().setInstances(Runtime.getRuntime().availableProcessors()))
                .onSuccess(id -> System.out.println("proxy listening on 127.0.0.1:19080"));
    }
}
