package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.Signature;
import io.heartgate.scheduler.config.SchedulerConfigBuilder;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.proxy.ProxyCounters;
import io.heartgate.scheduler.replicas.EventCodec;
import io.heartgate.scheduler.replicas.GatewayEvent;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three scheduler replicas on one real broker, sharing the gateway events topic: a key's limit
 * holds across them, a node one of them ejects is held out by all, a response made through one is
 * continued on its node through another, a restarted replica rebuilds its buckets, and records
 * that are not the replicas' own are counted and dropped.
 */
@ExtendWith(KafkaExtension.class)
class ReplicasIT {

    private static final String LIMITED = "sk-limited-0123456789";
    private static final int RPM = 60;
    private static final String HEARTBEAT_KEYS = "replicas 0123456789abcdef0123456789abcdef\n";

    @TempDir
    Path dir;
    private Cluster cluster;
    private Path keys;
    private final List<Scheduler> replicas = new ArrayList<>();

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        cluster = new Cluster(kafka.bootstrapServers());
        keys = Files.writeString(dir.resolve("api-keys"), "limited " + ApiKeys.hash(LIMITED) + " rpm=" + RPM + "\n");
    }

    @AfterEach
    void tearDown() throws Exception {
        for (Scheduler s : replicas) {
            s.close();
        }
        cluster.close();
    }

    private Scheduler replica(Consumer<SchedulerConfigBuilder> tune) {
        SchedulerConfigBuilder b = new SchedulerConfigBuilder(cluster.bootstrap, cluster.topic)
                .security(new SecurityConfig(keys, null, null, false, null, null, null, null, null));
        tune.accept(b);
        Scheduler s = Scheduler.start(b.build(), Clock.systemUTC());
        replicas.add(s);
        return s;
    }

    private void startThree(int routable) {
        for (int i = 0; i < 3; i++) {
            replica(b -> { });
        }
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> replicas.stream()
                .allMatch(s -> s.table().snapshot().routable().size() == routable && s.replicas().replicas().size() == 3));
    }

    private HttpResponse<String> post(Scheduler s, String path, String body, String key) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.proxyPort() + path))
                .timeout(Duration.ofSeconds(30)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            r.header("authorization", "Bearer " + key);
        }
        return cluster.http.send(r.build(), HttpResponse.BodyHandlers.ofString());
    }

    private String get(Scheduler s, String path) throws Exception {
        return cluster.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.adminPort() + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    /** Returns the value of {@code name} with the one label {@code label} (or none), 0 when absent. */
    private double metric(Scheduler s, String name, String label) throws Exception {
        String series = label == null ? Pattern.quote(name) : Pattern.quote(name + "{" + label) + ",?\\}";
        Matcher m = Pattern.compile("(?m)^" + series + " (\\S+)$").matcher(get(s, "/metrics"));
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    private static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    @Test
    void aKeysLimitHoldsAcrossThreeReplicasAndARestartedReplicaRebuildsItsBuckets() throws Exception {
        for (String id : List.of("n1", "n2")) {
            Cluster.SimNode sim = cluster.sim(id, c -> c.timing(2, Duration.ofMillis(1), Duration.ofMillis(1)));
            cluster.heartbeat(id, sim.url(), b -> b);
        }
        startThree(2);
        // 300 requests, 100 through each replica, as fast as each answers: the three race each other.
        ExecutorService clients = Executors.newFixedThreadPool(3);
        long started = System.nanoTime();
        List<Future<int[]>> counts = new ArrayList<>();
        for (Scheduler s : replicas) {
            counts.add(clients.submit(() -> {
                int[] granted = {0};
                for (int i = 0; i < 100; i++) {
                    int status = post(s, "/v1/chat/completions", CHAT, LIMITED).statusCode();
                    assertThat(status).isIn(200, 429);
                    granted[0] += status == 200 ? 1 : 0;
                }
                return granted;
            }));
        }
        int granted = 0;
        for (Future<int[]> f : counts) {
            granted += f.get(60, TimeUnit.SECONDS)[0];
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        clients.shutdown();
        // The bound (docs/OPERATIONS.md): one bucket's grants (its burst, rpm, and the refill over the
        // run) plus what the replicas grant before each hears the others: each replica's rate times a
        // report interval (100 ms) and the topic's delivery (100 ms allowed here).
        double perReplicaRate = 100 / seconds;
        double bound = RPM + seconds * RPM / 60.0 + 3 * perReplicaRate * 0.2;
        assertThat(granted).as("granted of 300 in %.1f s (per replica, each would grant %d)", seconds, RPM)
                .isBetween(RPM, (int) Math.ceil(bound));
        assertThat(granted).as("well under three separate replicas' grants").isLessThan(2 * RPM + 20);

        // A replica stops and a new one starts: it is listed within an interval, and its buckets are
        // rebuilt from the last minute's usage on the topic, not started full.
        Scheduler first = replicas.get(0);
        Scheduler gone = replicas.remove(2);
        String goneId = gone.replicas().self();
        gone.close();
        Scheduler again = replica(b -> { });
        String againId = again.replicas().self();
        Awaitility.await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(20))
                .until(() -> ids(first).contains(againId));
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> !ids(first).contains(goneId));
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> again.table().snapshot().routable().size() == 2
                && again.replicas().isCaughtUp());
        HttpResponse<String> through = post(again, "/v1/chat/completions", CHAT, LIMITED);
        long remaining = Long.parseLong(through.headers().firstValue("x-ratelimit-remaining-requests").orElseThrow());
        assertThat(remaining).as("a fresh bucket would hold %d", RPM - 1).isLessThan(RPM / 2);
    }

    private List<String> ids(Scheduler s) throws Exception {
        List<String> ids = new ArrayList<>();
        JsonArray list = new JsonObject(get(s, "/admin/replicas")).getJsonArray("replicas");
        list.forEach(o -> ids.add(((JsonObject) o).getString("id")));
        return ids;
    }

    @Test
    void aNodeOneReplicaEjectsIsHeldOutByTheOthersWithin200Ms() throws Exception {
        Cluster.SimNode sim = cluster.sim("n1", c -> c.timing(2, Duration.ofMillis(1), Duration.ofMillis(1)));
        cluster.heartbeat("n1", sim.url(), b -> b);
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort(); // nothing listens there: every connect is refused with a reset
        }
        cluster.heartbeat("dead", "http://127.0.0.1:" + closed, b -> b);
        startThree(2);
        Scheduler a = replicas.get(0);
        for (int i = 0; i < 20 && !a.health().isEjected("dead"); i++) {
            assertThat(post(a, "/v1/chat/completions", CHAT, LIMITED).statusCode()).isEqualTo(200);
        }
        assertThat(a.health().isEjected("dead")).as("ejected by the replica that failed on it").isTrue();
        // When A ejected it: its first ejection lasts --eject-for.
        Instant ejectedAt = a.health().ejection("dead").orElseThrow().until().minus(a.config().proxy().ejectFor());
        Awaitility.await().atMost(Duration.ofMillis(500)).pollInterval(Duration.ofMillis(2)).until(() ->
                replicas.get(1).health().isEjected("dead") && replicas.get(2).health().isEjected("dead"));
        assertThat(Duration.between(ejectedAt, Instant.now())).as("from A's ejection to both others holding it out")
                .isLessThanOrEqualTo(Duration.ofMillis(200));
        assertThat(Duration.between(a.health().ejection("dead").orElseThrow().until(),
                replicas.get(2).health().ejection("dead").orElseThrow().until()).abs())
                .as("held out until about the same instant").isLessThan(Duration.ofMillis(100));
        assertThat(metric(replicas.get(0), "heartgate_nodes_ejected", null)).isEqualTo(1.0);
        Scheduler b = replicas.get(1);
        for (int i = 0; i < 6; i++) {
            assertThat(post(b, "/v1/chat/completions", CHAT, LIMITED).headers().firstValue("x-upstream-node")).hasValue("n1");
        }
        assertThat(b.proxyCounters().get(ProxyCounters.Counter.CONNECT_FAILURES)).as("never tried it").isZero();

        // The node answers again (an operator fixed it) and one replica has an answer from it: all readmit it.
        for (Scheduler s : replicas) {
            assertThat(s.health().isEjected("dead")).isTrue();
        }
        a.health().succeeded("dead");
        Awaitility.await().atMost(Duration.ofSeconds(2)).until(() -> replicas.stream()
                .noneMatch(s -> s.health().isEjected("dead")));
    }

    @Test
    void aResponseMadeThroughOneReplicaIsContinuedOnItsNodeThroughAnother() throws Exception {
        for (String id : List.of("n1", "n2", "n3")) {
            Cluster.SimNode sim = cluster.sim(id, c -> c.timing(2, Duration.ofMillis(1), Duration.ofMillis(1)));
            cluster.heartbeat(id, sim.url(), b -> b);
        }
        startThree(3);
        Scheduler a = replicas.get(0);
        Scheduler c = replicas.get(2);
        HttpResponse<String> first = post(a, "/v1/responses", "{\"model\":\"llama3:8b\",\"input\":\"hello\"}", LIMITED);
        assertThat(first.statusCode()).isEqualTo(200);
        String id = new JsonObject(first.body()).getString("id");
        String maker = first.headers().firstValue("x-upstream-node").orElseThrow();
        Awaitility.await().atMost(Duration.ofSeconds(2))
                .until(() -> metric(c, "heartgate_events_received_total", "type=\"placed\"") >= 1);
        for (int turn = 0; turn < 6; turn++) {
            HttpResponse<String> next = post(c, "/v1/responses", "{\"model\":\"llama3:8b\",\"input\":\"and then?\","
                    + "\"previous_response_id\":\"" + id + "\"}", LIMITED);
            assertThat(next.statusCode()).as(next.body()).isEqualTo(200);
            assertThat(next.headers().firstValue("x-upstream-node")).hasValue(maker);
        }
    }

    @Test
    void recordsThatAreNotTheReplicasOwnAreCountedAndDropped() throws Exception {
        Path signing = Files.writeString(dir.resolve("heartbeat-keys"), HEARTBEAT_KEYS);
        Scheduler s = replica(b -> b.security(new SecurityConfig(keys, null, null, false, signing, null, null, null, null)));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> s.replicas().replicas().size() == 1);
        String topic = cluster.topic + "-events";
        EventCodec codec = new EventCodec();
        HeartbeatSigner signer = new HeartbeatSigner(HeartbeatKeys.parse(HEARTBEAT_KEYS));
        GatewayEvent.Usage usage = new GatewayEvent.Usage("forger", System.currentTimeMillis(),
                Map.of("limited", new GatewayEvent.Debit(1000, 0)));
        cluster.sendRaw(new ProducerRecord<>(topic, codec.key(usage), codec.encode(usage, 1))); // unsigned
        cluster.sendRaw(signed(signer, topic, "usage/x".getBytes(StandardCharsets.UTF_8), "not json".getBytes()));
        cluster.sendRaw(signed(signer, topic, codec.key(usage), new String(codec.encode(usage, 2), StandardCharsets.UTF_8)
                .replace("\"v\":1", "\"v\":9").getBytes(StandardCharsets.UTF_8)));
        cluster.sendRaw(signed(signer, topic, "usage/other".getBytes(StandardCharsets.UTF_8), codec.encode(usage, 3)));
        GatewayEvent.Usage old = new GatewayEvent.Usage("forger", System.currentTimeMillis() - 120_000,
                Map.of("limited", new GatewayEvent.Debit(1000, 0)));
        cluster.sendRaw(signed(signer, topic, codec.key(old), codec.encode(old, 4))); // captured earlier, written again
        Awaitility.await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            assertThat(metric(s, "heartgate_events_rejected_total", "reason=\"signature\"")).isEqualTo(1.0);
            assertThat(metric(s, "heartgate_events_rejected_total", "reason=\"malformed\"")).isEqualTo(1.0);
            assertThat(metric(s, "heartgate_events_rejected_total", "reason=\"version\"")).isEqualTo(1.0);
            assertThat(metric(s, "heartgate_events_rejected_total", "reason=\"field\"")).isEqualTo(1.0);
            assertThat(metric(s, "heartgate_events_rejected_total", "reason=\"replayed\"")).isEqualTo(1.0);
        });
        // A record of a replica, then the same record again at once (within the 30 s): the second is refused.
        ProducerRecord<byte[], byte[]> real = signed(signer, topic, codec.key(usage5()), codec.encode(usage5(), 7));
        cluster.sendRaw(real);
        cluster.sendRaw(new ProducerRecord<>(topic, null, real.key(), real.value(), real.headers()));
        Awaitility.await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            assertThat(metric(s, "heartgate_events_received_total", "type=\"usage\"")).isEqualTo(1.0);
            assertThat(metric(s, "heartgate_events_rejected_total", "reason=\"replayed\"")).isEqualTo(2.0);
        });
        // Only the one record debited the key, once; the replica goes on.
        assertThat(new JsonObject(get(s, "/readyz")).getString("limits")).isEqualTo("shared");
        HttpResponse<String> r = post(s, "/v1/chat/completions", CHAT, LIMITED); // no node: 503, but limits first
        int remaining = Integer.parseInt(r.headers().firstValue("x-ratelimit-remaining-requests").orElseThrow());
        assertThat(remaining).as("60 less the 5 reported and this one; a token a second refilled since")
                .isBetween(RPM - 5 - 1, RPM - 5 - 1 + 3);
    }

    private static GatewayEvent.Usage usage5() {
        return new GatewayEvent.Usage("other-replica", System.currentTimeMillis(), Map.of("limited", new GatewayEvent.Debit(5, 0)));
    }

    private static ProducerRecord<byte[], byte[]> signed(HeartbeatSigner signer, String topic, byte[] key, byte[] value) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key, value);
        Signature sig = signer.sign(key, value);
        r.headers().add(HeartbeatSigner.KEY_ID_HEADER, sig.keyIdHeader())
                .add(HeartbeatSigner.SIGNATURE_HEADER, sig.signatureHeader());
        return r;
    }
}
