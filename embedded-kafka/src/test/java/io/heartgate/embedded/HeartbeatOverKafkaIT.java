package io.heartgate.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.NodeState;
import io.heartgate.protocol.Rule;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(KafkaExtension.class)
class HeartbeatOverKafkaIT {

    private final HeartbeatCodec codec = new HeartbeatCodec();

    @Test
    void heartbeatsTombstonesAndGarbageCrossARealBroker(TestKafka kafka) throws Exception {
        String topic = "heartbeats-" + UUID.randomUUID();
        try (Admin admin = Admin.create(props(kafka, AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        Heartbeat a1 = beat("gpu-a", 1);
        Heartbeat b1 = beat("gpu-b", 1);
        Heartbeat a2 = beat("gpu-a", 2);

        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps(kafka))) {
            send(producer, topic, "gpu-a", codec.encode(a1));
            send(producer, topic, "gpu-b", codec.encode(b1));
            send(producer, topic, "gpu-x", new byte[] {(byte) 0xde, (byte) 0xad, '{', 'x'});
            send(producer, topic, "gpu-a", codec.encode(a2));
            send(producer, topic, "gpu-b", null);
            producer.flush();
        }

        List<Decoded> seen = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(kafka))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    seen.add(codec.decodeRecord(r.key(), r.value()));
                }
                return seen.size() >= 5;
            });
        }

        assertThat(seen).hasSize(5);
        assertThat(seen.get(0)).isEqualTo(new Decoded.Beat(a1));
        assertThat(seen.get(1)).isEqualTo(new Decoded.Beat(b1));
        assertThat(seen.get(2)).isInstanceOfSatisfying(Decoded.Rejected.class,
                r -> assertThat(r.rejection().rule()).isEqualTo(Rule.MALFORMED_JSON));
        assertThat(seen.get(3)).as("the consumer carries on after garbage").isEqualTo(new Decoded.Beat(a2));
        assertThat(seen.get(4)).isEqualTo(new Decoded.Leave("gpu-b"));
    }

    private static Heartbeat beat(String nodeId, long seq) {
        return Heartbeat.builder(nodeId, "http://10.0.0." + (nodeId.hashCode() & 0x7f) + ":11434")
                .instance("instance-" + nodeId)
                .seq(seq)
                .state(NodeState.UP)
                .weight(3)
                .intervalMs(1000)
                .sentAt(Instant.parse("2026-11-30T16:00:00Z"))
                .backend("ollama")
                .models(List.of("llama3:8b"))
                .load(new Load(1, 0, 0.25))
                .build();
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, String topic, String key, byte[] value)
            throws Exception {
        producer.send(new ProducerRecord<>(topic, key.getBytes(StandardCharsets.UTF_8), value))
                .get(30, TimeUnit.SECONDS);
    }

    private static Properties props(TestKafka kafka, String bootstrapKey) {
        Properties p = new Properties();
        p.put(bootstrapKey, kafka.bootstrapServers());
        return p;
    }

    private static Properties producerProps(TestKafka kafka) {
        Properties p = props(kafka, ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        return p;
    }

    private static Properties consumerProps(TestKafka kafka) {
        Properties p = props(kafka, ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return p;
    }
}
