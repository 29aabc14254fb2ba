package io.heartgate.agent.publish;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.HeartbeatRules;
import io.heartgate.protocol.ModelInfo;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

class HeartbeatPublisherTest {

    private final MockProducer<byte[], byte[]> producer =
            new MockProducer<>(false, null, new ByteArraySerializer(), new ByteArraySerializer());
    private final HeartbeatPublisher publisher = new HeartbeatPublisher(producer, "gpu-heartbeats", "gpu-a");

    private static Heartbeat beat(long seq) {
        return Heartbeat.builder("gpu-a", "http://10.0.0.5:11434").seq(seq).build();
    }

    @Test
    void sendsKeyedByNodeIdToTheTopic() {
        assertThat(publisher.publish(beat(1))).isTrue();
        producer.completeNext();

        var record = producer.history().get(0);
        assertThat(record.topic()).isEqualTo("gpu-heartbeats");
        assertThat(new String(record.key(), StandardCharsets.UTF_8)).isEqualTo("gpu-a");
        assertThat(new HeartbeatCodec().decodeRecord(record.key(), record.value()))
                .isEqualTo(new Decoded.Beat(beat(1)));
        assertThat(publisher.sentCount()).isEqualTo(1);
    }

    @Test
    void keepsAtMostOneHeartbeatInFlight() {
        assertThat(publisher.publish(beat(1))).isTrue();
        assertThat(publisher.publish(beat(2))).isFalse();
        assertThat(publisher.publish(beat(3))).isFalse();
        assertThat(producer.history()).hasSize(1);
        assertThat(publisher.skippedCount()).isEqualTo(2);

        producer.completeNext();
        assertThat(publisher.publish(beat(4))).isTrue();
        assertThat(producer.history()).hasSize(2);
    }

    @Test
    void tracksAnOutageAndTheRecovery() {
        publisher.publish(beat(1));
        producer.errorNext(new TimeoutException("Expiring 1 record(s)"));
        assertThat(publisher.kafkaReachable()).isFalse();
        assertThat(publisher.failedCount()).isEqualTo(1);

        publisher.publish(beat(2));
        producer.errorNext(new TimeoutException("Expiring 1 record(s)"));
        publisher.publish(beat(3));
        producer.completeNext();

        assertThat(publisher.kafkaReachable()).isTrue();
        assertThat(publisher.failedCount()).isEqualTo(2);
        assertThat(publisher.sentCount()).isEqualTo(1);
    }

    @Test
    void survivesASendThatThrows() {
        MockProducer<byte[], byte[]> closed =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        closed.close();
        HeartbeatPublisher p = new HeartbeatPublisher(closed, "t", "gpu-a");

        assertThat(p.publish(beat(1))).isFalse();
        assertThat(p.kafkaReachable()).isFalse();
        assertThat(p.publish(beat(2))).as("nothing stays stuck in flight").isFalse();
        assertThat(p.failedCount()).isEqualTo(2);
    }

    @Test
    void publishesATombstone() {
        MockProducer<byte[], byte[]> auto =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        HeartbeatPublisher p = new HeartbeatPublisher(auto, "gpu-heartbeats", "gpu-a");

        assertThat(p.publishTombstone(Duration.ofSeconds(1))).isTrue();
        assertThat(auto.history().get(0).value()).isNull();
        assertThat(new HeartbeatCodec().decodeRecord(auto.history().get(0).key(), null))
                .isEqualTo(new Decoded.Leave("gpu-a"));
    }

    @Test
    void boundsEveryWaitByTheInterval() {
        Map<String, Object> c = HeartbeatPublisher.producerConfig("127.0.0.1:9092", "gpu-a", Duration.ofSeconds(1));

        assertThat(c).containsEntry(ProducerConfig.ACKS_CONFIG, "1")
                .containsEntry(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none")
                .containsEntry(ProducerConfig.MAX_BLOCK_MS_CONFIG, 500L)
                .containsEntry(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 2000)
                .containsEntry(ProducerConfig.BUFFER_MEMORY_CONFIG, 1024L * 1024);
        // Kafka itself checks the combination (delivery >= linger + request timeout) when it builds a producer.
        for (Duration interval : new Duration[] {Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(60)}) {
            new KafkaProducer<byte[], byte[]>(HeartbeatPublisher.producerConfig("127.0.0.1:1", "gpu-a", interval))
                    .close(Duration.ZERO);
        }
    }

    @Test
    void aHeartbeatTooLargeWithItsModelDescriptionsGoesWithoutThem() {
        List<String> names = new ArrayList<>();
        List<ModelInfo> info = new ArrayList<>();
        String pad = "p".repeat(100);
        for (int i = 0; i < HeartbeatRules.MAX_MODELS; i++) {
            String name = String.format("%04d-", i) + "m".repeat(250);
            names.add(name);
            info.add(new ModelInfo(name, 1L, pad, pad, new ModelInfo.Details(
                    pad, pad, pad, List.of(pad, pad, pad, pad, pad, pad, pad, pad), pad, pad)));
        }
        Heartbeat big = Heartbeat.builder("gpu-a", "http://h:1")
                .models(names).modelInfo(info).build();
        HeartbeatCodec codec = new HeartbeatCodec();
        assertThat(codec.encode(big).length).as("the legal heartbeat as built")
                .isGreaterThan(HeartbeatCodec.MAX_MESSAGE_BYTES);

        byte[] sent = publisher.encodeWithinLimit(big);

        assertThat(sent.length).isLessThanOrEqualTo(HeartbeatCodec.MAX_MESSAGE_BYTES);
        Heartbeat decoded = ((Decoded.Beat) codec.decode(sent)).heartbeat();
        assertThat(decoded.models()).hasSize(HeartbeatRules.MAX_MODELS);
        assertThat(decoded.modelInfo()).isEmpty();
        Heartbeat small = Heartbeat.builder("gpu-a", "http://h:1")
                .models(names.subList(0, 3)).modelInfo(info.subList(0, 3)).build();
        assertThat(publisher.encodeWithinLimit(small)).isEqualTo(codec.encode(small));
    }
}
