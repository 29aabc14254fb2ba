package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.Rule;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.Signature;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Signed heartbeats through a real broker: forged, unsigned and mis-scoped records and a heartbeat
 * pointing at a metadata service are each dropped with their reason and counted, and the table is
 * unchanged; a signed tombstone removes its node and an unsigned one does not.
 */
@ExtendWith(KafkaExtension.class)
class SignedHeartbeatsIT {

    private static final String GPU_SECRET = "0123456789abcdef0123456789abcdef-gpu";
    private static final String OLD_SECRET = "fedcba9876543210fedcba9876543210-old";

    @TempDir
    Path dir;

    private Cluster cluster;
    private HeartbeatSigner gpuKey;
    private HeartbeatSigner oldKey;
    private HeartbeatSigner strangerKey;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        cluster = new Cluster(kafka.bootstrapServers());
        // The scheduler trusts two keys at once (a rotation): "gpu" for gpu-* nodes, "old" for any.
        Path keys = Files.writeString(dir.resolve("heartbeat-keys"), "gpu " + GPU_SECRET + " gpu-*\n"
                + "old " + OLD_SECRET + "\n");
        gpuKey = new HeartbeatSigner(HeartbeatKeys.parse("gpu " + GPU_SECRET + " gpu-*"));
        oldKey = new HeartbeatSigner(HeartbeatKeys.parse("old " + OLD_SECRET));
        strangerKey = new HeartbeatSigner(HeartbeatKeys.parse("gpu " + "x".repeat(40)));
        cluster.startScheduler(c -> c.security(new SecurityConfig(null, null, null, false, keys, null, null, null, null))
                .proxy(p -> p.allowUpstream("127.0.0.0/8")));
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
    }

    private void send(String id, byte[] value, HeartbeatSigner signer) throws Exception {
        sendTombstoneOf(id, value, signer, "i-" + id, System.currentTimeMillis());
    }

    /** Sends {@code value}, or a tombstone of {@code instance} signed as sent at {@code sentMs}. */
    private void sendTombstoneOf(String id, byte[] value, HeartbeatSigner signer, String instance, long sentMs)
            throws Exception {
        byte[] key = id.getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(cluster.topic, key, value);
        if (signer != null && value == null) {
            byte[] tombstone = (instance + " " + sentMs).getBytes(StandardCharsets.US_ASCII);
            Signature s = signer.signTombstone(key, tombstone);
            r.headers().add(HeartbeatSigner.TOMBSTONE_HEADER, tombstone)
                    .add(HeartbeatSigner.KEY_ID_HEADER, s.keyIdHeader())
                    .add(HeartbeatSigner.SIGNATURE_HEADER, s.signatureHeader());
        } else if (signer != null) {
            Signature s = signer.sign(key, value);
            r.headers().add(HeartbeatSigner.KEY_ID_HEADER, s.keyIdHeader())
                    .add(HeartbeatSigner.SIGNATURE_HEADER, s.signatureHeader());
        }
        cluster.sendRaw(r);
    }

    private byte[] beat(String id, String url) {
        return cluster.encoded(id, url, UnaryOperator.identity());
    }

    private Set<String> nodes() {
        return cluster.scheduler.table().snapshot().nodes().stream().map(n -> n.id()).collect(
                Collectors.toSet());
    }

    private long rejected(Rule rule) {
        return cluster.scheduler.stats().rejectedCount(rule);
    }

    @Test
    void onlyRecordsSignedByAKeyForTheirNodeReachTheTable() throws Exception {
        send("gpu-a", beat("gpu-a", "http://127.0.0.1:9001"), gpuKey);
        send("cpu-b", beat("cpu-b", "http://127.0.0.1:9002"), oldKey); // the old key may speak for any node
        await().atMost(Duration.ofSeconds(10)).until(() -> nodes().equals(Set.of("gpu-a", "cpu-b")));

        send("gpu-c", beat("gpu-c", "http://127.0.0.1:9003"), null);
        byte[] value = beat("gpu-d", "http://127.0.0.1:9004");
        send("gpu-d", value, strangerKey); // a key id we know, a secret we do not: a forgery
        send("cpu-e", beat("cpu-e", "http://127.0.0.1:9005"), gpuKey); // "gpu" may not speak for cpu-e
        ProducerRecord<byte[], byte[]> unknownKey = new ProducerRecord<>(cluster.topic, "gpu-f".getBytes(StandardCharsets.UTF_8),
                beat("gpu-f", "http://127.0.0.1:9006"));
        unknownKey.headers().add(HeartbeatSigner.KEY_ID_HEADER, "retired".getBytes(StandardCharsets.UTF_8))
                .add(HeartbeatSigner.SIGNATURE_HEADER, "00".repeat(32).getBytes(StandardCharsets.UTF_8));
        cluster.sendRaw(unknownKey);
        send("gpu-g", beat("gpu-g", "http://169.254.169.254/"), gpuKey); // signed, but at the metadata service

        // Records of different nodes may sit on different partitions, read in any order.
        List<Rule> reasons = List.of(Rule.UNSIGNED, Rule.BAD_SIGNATURE, Rule.KEY_NOT_ALLOWED, Rule.UNKNOWN_KEY,
                Rule.URL_NOT_ALLOWED);
        await().atMost(Duration.ofSeconds(10)).until(() -> reasons.stream().allMatch(r -> rejected(r) >= 1));
        reasons.forEach(r -> assertThat(rejected(r)).as(r.name()).isEqualTo(1));
        assertThat(nodes()).containsExactlyInAnyOrder("gpu-a", "cpu-b");

        String metrics = cluster.http.send(HttpRequest.newBuilder(URI.create(
                        "http://127.0.0.1:" + cluster.scheduler.adminPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        for (String reason : List.of("unsigned", "unknown_key", "bad_signature", "key_not_allowed", "url_not_allowed")) {
            assertThat(metrics).contains("heartgate_heartbeats_rejected_total{reason=\"" + reason + "\"} 1.0");
        }

        // A tombstone must be signed too: an unsigned one cannot take a node out.
        send("gpu-a", null, null);
        send("cpu-b", null, gpuKey); // signed, but by a key that may not speak for cpu-b
        await().atMost(Duration.ofSeconds(10)).until(() -> rejected(Rule.UNSIGNED) == 2
                && rejected(Rule.KEY_NOT_ALLOWED) == 2);
        assertThat(nodes()).containsExactlyInAnyOrder("gpu-a", "cpu-b");
        send("gpu-a", null, gpuKey);
        await().atMost(Duration.ofSeconds(10)).until(() -> !nodes().contains("gpu-a"));
        assertThat(nodes()).containsExactly("cpu-b");
    }

    @Test
    void aSignedRecordWrittenAgainLaterCannotReviveItsNode() throws Exception {
        // A record captured five minutes ago, or one without sentAt, signed and all: the broker stamps
        // the copy with today's time, but the signed sentAt gives it away.
        send("gpu-old", cluster.encoded("gpu-old", "http://127.0.0.1:9010",
                b -> b.sentAt(Instant.now().minus(Duration.ofMinutes(5)))), gpuKey);
        send("gpu-undated", cluster.encoded("gpu-undated", "http://127.0.0.1:9011", b -> b.sentAt(null)), gpuKey);
        send("gpu-fresh", beat("gpu-fresh", "http://127.0.0.1:9012"), gpuKey);

        // Three keys may land on three partitions, read in any order: wait for all three records.
        await().atMost(Duration.ofSeconds(10)).until(() -> nodes().contains("gpu-fresh")
                && cluster.scheduler.stats().outcomeCount(NodeTable.Outcome.REPLAYED) == 2);
        assertThat(nodes()).containsExactly("gpu-fresh");

        // A signed tombstone from a stop five minutes ago, written again, or one of an earlier
        // instance: neither takes the live node out. Its own fresh one does.
        sendTombstoneOf("gpu-fresh", null, gpuKey, "i-gpu-fresh", System.currentTimeMillis() - 300_000);
        sendTombstoneOf("gpu-fresh", null, gpuKey, "i-earlier", System.currentTimeMillis());
        await().atMost(Duration.ofSeconds(10)).until(() -> cluster.scheduler.stats()
                .outcomeCount(NodeTable.Outcome.REPLAYED) == 3
                && cluster.scheduler.stats().outcomeCount(NodeTable.Outcome.STALE_INSTANCE) == 1);
        assertThat(nodes()).containsExactly("gpu-fresh");
        sendTombstoneOf("gpu-fresh", null, gpuKey, "i-gpu-fresh", System.currentTimeMillis());
        await().atMost(Duration.ofSeconds(10)).until(() -> nodes().isEmpty());
    }
}
