package io.heartgate.scheduler;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.scheduler.config.SchedulerConfigBuilder;
import io.heartgate.sim.Faults;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.awaitility.Awaitility;

/**
 * A test cluster on a real broker: simulated nodes (each on its own Vert.x, so one can be killed),
 * heartbeats for them produced every interval by the test, and a scheduler with its proxy.
 */
final class Cluster implements AutoCloseable {

    static final int INTERVAL_MS = 500;

    final String bootstrap;
    final String topic = "proxy-it-" + UUID.randomUUID();
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    final Map<String, SimNode> sims = new LinkedHashMap<>();
    private final Map<String, Heartbeat.Builder> beating = new ConcurrentHashMap<>();
    private final HeartbeatCodec codec = new HeartbeatCodec();
    private final AtomicLong seq = new AtomicLong();
    private final KafkaProducer<byte[], byte[]> producer;
    private final ScheduledExecutorService agents = Executors.newSingleThreadScheduledExecutor();
    Scheduler scheduler;

    record SimNode(String id, Vertx vertx, SimServer server) {
        String url() {
            return "http://127.0.0.1:" + server.port();
        }
    }

    Cluster(String bootstrap) {
        this.bootstrap = bootstrap;
        producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.LINGER_MS_CONFIG, 0));
        agents.scheduleAtFixedRate(() -> beating.forEach((id, b) -> send(id, b.seq(seq.incrementAndGet()).build())),
                0, INTERVAL_MS, TimeUnit.MILLISECONDS);
    }

    /** Starts a sim named {@code id}. */
    SimNode sim(String id, UnaryOperator<SimConfigBuilder> tune) throws Exception {
        return sim(id, List.of("llama3:8b", "qwen2.5:7b"), tune);
    }

    /** Starts a sim named {@code id} serving {@code models}. */
    SimNode sim(String id, List<String> models, UnaryOperator<SimConfigBuilder> tune) throws Exception {
        Vertx vertx = Vertx.vertx();
        SimServer server = new SimServer(tune.apply(new SimConfigBuilder(id, models)).build(),
                Clock.systemUTC(), System::nanoTime);
        vertx.deployVerticle(server).await(20, TimeUnit.SECONDS);
        SimNode node = new SimNode(id, vertx, server);
        sims.put(id, node);
        return node;
    }

    /** Publishes heartbeats for {@code id} every interval, as an agent would. */
    void heartbeat(String id, String url, UnaryOperator<Heartbeat.Builder> tune) {
        Heartbeat.Builder b = tune.apply(Heartbeat.builder(id, url).instance("i-" + id).intervalMs(INTERVAL_MS));
        beating.put(id, b);
        send(id, b.seq(seq.incrementAndGet()).build());
    }

    /** Publishes a tombstone for {@code id}, as an agent does when it stops. */
    synchronized void tombstone(String id) {
        producer.send(new ProducerRecord<>(topic, id.getBytes(StandardCharsets.UTF_8), null));
    }

    /** Sends one record as is: a test's own bytes and headers, forged or signed. */
    synchronized void sendRaw(ProducerRecord<byte[], byte[]> record) throws Exception {
        producer.send(record).get(10, TimeUnit.SECONDS);
    }

    /** Returns the encoded heartbeat {@code id} at {@code url}, as an agent would publish it. */
    byte[] encoded(String id, String url, UnaryOperator<Heartbeat.Builder> tune) {
        return codec.encode(tune.apply(Heartbeat.builder(id, url).instance("i-" + id).intervalMs(INTERVAL_MS)
                .seq(seq.incrementAndGet()).sentAt(Instant.now())).build());
    }

    /** Stops the heartbeats of {@code id}. */
    void stopHeartbeats(String id) {
        beating.remove(id);
    }

    private synchronized void send(String id, Heartbeat hb) {
        producer.send(new ProducerRecord<>(topic, id.getBytes(StandardCharsets.UTF_8), codec.encode(hb)));
    }

    /** Starts the scheduler with {@code tune} applied to the test configuration's builder. */
    Scheduler startScheduler(Consumer<SchedulerConfigBuilder> tune) {
        SchedulerConfigBuilder b = new SchedulerConfigBuilder(bootstrap, topic);
        tune.accept(b);
        scheduler = Scheduler.start(b.build(), Clock.systemUTC());
        return scheduler;
    }

    /** Waits until the scheduler routes to {@code n} nodes. */
    void awaitRoutable(int n) {
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> scheduler.table().snapshot().routable().size() == n);
    }

    URI proxy(String path) {
        return URI.create("http://127.0.0.1:" + scheduler.proxyPort() + path);
    }

    HttpResponse<String> post(String path, String json) throws Exception {
        return http.send(HttpRequest.newBuilder(proxy(path)).timeout(Duration.ofSeconds(30))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(proxy(path)).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    JsonObject admin(String path) throws Exception {
        return new JsonObject(http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + scheduler.adminPort() + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body());
    }

    JsonObject simStats(String id) throws Exception {
        return new JsonObject(http.send(HttpRequest.newBuilder(
                URI.create(sims.get(id).url() + "/sim/stats")).build(), HttpResponse.BodyHandlers.ofString()).body());
    }

    void faults(String id, Faults faults) {
        sims.get(id).server().setFaults(faults);
    }

    /** Stops a sim's server for good, as if its process died. */
    void kill(String id) throws Exception {
        sims.get(id).vertx().close().await(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws Exception {
        agents.shutdownNow();
        producer.close(Duration.ofSeconds(2));
        if (scheduler != null) {
            scheduler.close();
        }
        for (SimNode s : sims.values()) {
            s.vertx().close().await(10, TimeUnit.SECONDS);
        }
    }
}
