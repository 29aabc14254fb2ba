package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.Rule;
import io.heartgate.scheduler.config.SchedulerConfigBuilder;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Runs whole schedulers against a real broker, with heartbeats produced by the test. */
@ExtendWith(KafkaExtension.class)
class SchedulerDiscoveryIT {

    private static final int INTERVAL_MS = 500;

    private final HttpClient http = HttpClient.newHttpClient();
    private final HeartbeatCodec codec = new HeartbeatCodec();
    private final Set<String> beating = ConcurrentHashMap.newKeySet();
    private final AtomicLong seq = new AtomicLong();
    private final Map<String, Instant> lastSent = new ConcurrentHashMap<>();
    private ScheduledExecutorService agents;
    private KafkaProducer<byte[], byte[]> producer;
    private String topic;
    private Scheduler scheduler;

    @BeforeEach
    void setUp(TestKafka kafka) {
        topic = "discovery-it-" + UUID.randomUUID();
        producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.LINGER_MS_CONFIG, 0));
        agents = Executors.newSingleThreadScheduledExecutor();
        agents.scheduleAtFixedRate(() -> beating.forEach(this::beat), 0, INTERVAL_MS, TimeUnit.MILLISECONDS);
    }

    @AfterEach
    void tearDown() {
        agents.shutdownNow();
        producer.close(Duration.ofSeconds(2));
        if (scheduler != null) {
            scheduler.close();
        }
    }

    private void beat(String id) {
        Heartbeat hb = Heartbeat.builder(id, "http://" + id + ".internal:11434")
                .instance("i-" + id).seq(seq.incrementAndGet()).intervalMs(INTERVAL_MS).weight(2)
                .models(List.of("llama3:8b")).build();
        send(id, codec.encode(hb));
        lastSent.put(id, Instant.now());
    }

    private void send(String key, byte[] value) {
        producer.send(new ProducerRecord<>(topic, key.getBytes(StandardCharsets.UTF_8), value));
    }

    private Set<String> listed() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + scheduler.adminPort() + "/admin/nodes")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        JsonArray nodes = new JsonObject(r.body()).getJsonArray("nodes");
        return nodes.stream().map(o -> ((JsonObject) o).getString("nodeId")).collect(Collectors.toSet());
    }

    private int readyStatus() throws Exception {
        return http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + scheduler.adminPort() + "/readyz")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    @Test
    void aHeartbeatPointingOutsideTheAllowListIsRejectedCountedAndChangesNothing(TestKafka kafka) throws Exception {
        scheduler = Scheduler.start(new SchedulerConfigBuilder(kafka.bootstrapServers(), topic)
                .proxy(p -> p.allowUpstream("*.internal,10.0.0.0/8")).build(), Clock.systemUTC());
        beating.add("gpu-a");
        await().atMost(Duration.ofSeconds(10)).until(() -> listed().equals(Set.of("gpu-a")));

        Heartbeat metadata = Heartbeat.builder("meta", "http://169.254.169.254/").instance("i-meta").seq(1L)
                .intervalMs(INTERVAL_MS).build();
        Heartbeat hijack = Heartbeat.builder("gpu-a", "http://127.0.0.1:11434").instance("i-gpu-a")
                .seq(seq.incrementAndGet() + 1_000_000).intervalMs(INTERVAL_MS).build();
        send("meta", codec.encode(metadata));
        send("gpu-a", codec.encode(hijack));
        producer.flush();

        await().atMost(Duration.ofSeconds(10)).until(() -> scheduler.stats().rejectedCount(Rule.URL_NOT_ALLOWED) == 2);
        assertThat(listed()).containsExactly("gpu-a");
        assertThat(scheduler.table().snapshot().node("gpu-a").url()).isEqualTo("http://gpu-a.internal:11434");
        HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + scheduler.adminPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(metrics.body()).contains("heartgate_heartbeats_rejected_total{reason=\"url_not_allowed\"} 2.0");
    }

    @Test
    void followsJoinsTombstonesExpiryRestartsAndGarbage(TestKafka kafka) throws Exception {
        scheduler = Scheduler.start(new SchedulerConfigBuilder(kafka.bootstrapServers(), topic).build(), Clock.systemUTC());
        await().atMost(Duration.ofSeconds(10)).until(() -> scheduler.discoveryStatus().caughtUp());
        assertThat(readyStatus()).as("caught up but nothing routable").isEqualTo(503);

        beating.addAll(Set.of("gpu-a", "gpu-b", "gpu-c"));
        await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(20))
                .until(() -> listed().equals(Set.of("gpu-a", "gpu-b", "gpu-c")));
        assertThat(readyStatus()).isEqualTo(200);
        JsonObject node = new JsonObject(http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + scheduler.adminPort() + "/admin/nodes")).build(),
                HttpResponse.BodyHandlers.ofString()).body()).getJsonArray("nodes").getJsonObject(0);
        assertThat(node.fieldNames()).contains("nodeId", "url", "state", "weight", "models", "routable",
                "lastHeartbeatAgeMs", "inFlight", "tokenLoad", "load");
        assertThat(node.getInteger("weight")).isEqualTo(2);
        assertThat(node.getJsonObject("tokenLoad").getLong("prefillBacklogTokens")).as("nothing sent").isZero();
        assertThat(node.getJsonObject("tokenLoad").getDouble("tokensPerByte")).isEqualTo(0.25);

        // A tombstone removes a node within 1 s.
        beating.remove("gpu-c");
        send("gpu-c", null);
        await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(20))
                .until(() -> !listed().contains("gpu-c"));

        // A node that stops heartbeating expires within its expiry (3 x 500 ms) plus 1 s.
        beating.remove("gpu-b");
        await().atMost(Duration.ofMillis(3 * INTERVAL_MS + 1000 + INTERVAL_MS)).pollInterval(Duration.ofMillis(20))
                .until(() -> !listed().contains("gpu-b"));
        long expiredAfter = Duration.between(lastSent.get("gpu-b"), Instant.now()).toMillis();
        System.out.printf("[heartgate-test] silent node gone %d ms after its last heartbeat (expiry %d ms)%n",
                expiredAfter, 3 * INTERVAL_MS);
        assertThat(expiredAfter).isLessThanOrEqualTo(3 * INTERVAL_MS + 1000);
        assertThat(listed()).containsExactly("gpu-a");

        // 1,000 garbage records leave the table and the process intact.
        for (int i = 0; i < 1000; i++) {
            send(i % 2 == 0 ? "gpu-junk" : "bad key", ("{\"v\":1,\"nodeId\":" + i).getBytes(StandardCharsets.UTF_8));
        }
        producer.flush();
        await().atMost(Duration.ofSeconds(10)).until(() -> scheduler.stats().rejectedCount() >= 1000);
        assertThat(scheduler.stats().rejectedCount(Rule.MALFORMED_JSON)).isEqualTo(500);
        assertThat(scheduler.stats().rejectedCount(Rule.INVALID_KEY)).isEqualTo(500);
        assertThat(listed()).containsExactly("gpu-a");
        assertThat(readyStatus()).isEqualTo(200);

        // A restarted scheduler shows every live node within 2 s of start and none of the dead ones.
        scheduler.close();
        Instant restart = Instant.now();
        scheduler = Scheduler.start(new SchedulerConfigBuilder(kafka.bootstrapServers(), topic).build(), Clock.systemUTC());
        await().atMost(Duration.ofSeconds(2).minus(Duration.between(restart, Instant.now())))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> listed().equals(Set.of("gpu-a")) && readyStatus() == 200);
        System.out.printf("[heartgate-test] restarted scheduler ready %d ms after start%n",
                Duration.between(restart, Instant.now()).toMillis());
    }
}
