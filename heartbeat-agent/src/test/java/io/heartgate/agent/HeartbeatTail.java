package io.heartgate.agent;

import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads a heartbeat topic from its beginning in tests, decoding each record. Not thread-safe. */
final class HeartbeatTail implements AutoCloseable {

    /** One record as seen: its decoding, its Kafka timestamp and offset. */
    record Seen(Decoded decoded, Instant timestamp, long offset) {
        Optional<Heartbeat> beat() {
            return decoded instanceof Decoded.Beat b ? Optional.of(b.heartbeat()) : Optional.empty();
        }
    }

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final HeartbeatCodec codec = new HeartbeatCodec();
    private final List<Seen> seen = new ArrayList<>();

    HeartbeatTail(String bootstrap, String topic) throws Exception {
        createTopic(bootstrap, topic);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        consumer = new KafkaConsumer<>(p);
        TopicPartition tp = new TopicPartition(topic, 0);
        consumer.assign(List.of(tp));
        consumer.seekToBeginning(List.of(tp));
    }

    static void createTopic(String bootstrap, String topic) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
    }

    /** Polls once, briefly. */
    void poll() {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
            seen.add(new Seen(codec.decodeRecord(r.key(), r.value()), Instant.ofEpochMilli(r.timestamp()), r.offset()));
        }
    }

    /** Returns everything seen so far. */
    List<Seen> seen() {
        return List.copyOf(seen);
    }

    /** Polls until {@code n} records were seen in all, or fails after {@code timeout}. */
    List<Seen> awaitCount(int n, Duration timeout) {
        await().atMost(timeout).pollInterval(Duration.ofMillis(1)).until(() -> {
            poll();
            return seen.size() >= n;
        });
        return seen();
    }

    /** Polls until a record seen after index {@code from} matches, or fails after {@code timeout}. */
    Seen awaitMatching(int from, Predicate<Seen> match, Duration timeout) {
        await().atMost(timeout).pollInterval(Duration.ofMillis(1)).until(() -> {
            poll();
            return seen.subList(Math.min(from, seen.size()), seen.size()).stream().anyMatch(match);
        });
        return seen.subList(from, seen.size()).stream().filter(match).findFirst().orElseThrow();
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(2));
    }
}
