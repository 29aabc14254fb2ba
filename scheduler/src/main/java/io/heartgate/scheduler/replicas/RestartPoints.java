package io.heartgate.scheduler.replicas;

import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.HeartbeatVerifier;
import io.heartgate.protocol.signing.Verification;
import io.heartgate.scheduler.discovery.RestartPoint;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the newest {@link RestartPoint} on the gateway events topic: the replicas' own heartbeats of
 * the last {@value #WITHIN_SECONDS} seconds that carry the longest node interval (written only while
 * a replica's node table is complete), read once at start with a consumer of its own, for at most
 * {@value #READ_FOR_SECONDS} seconds. Under {@code --heartbeat-keys} only records signed by an
 * accepted key count. A record that cannot be read, or one dated ahead of this replica's clock by
 * more than {@link RestartPoint#CLOCK_MARGIN}, is passed over: the worst a point can do is make a
 * restart read less, so none is taken on trust that need not be.
 */
final class RestartPoints {

    private static final Logger log = LoggerFactory.getLogger(RestartPoints.class);
    static final int WITHIN_SECONDS = 30;
    static final int READ_FOR_SECONDS = 3;

    private RestartPoints() {
    }

    /** Reads the newest point with {@code consumer}, which it closes; empty when there is none or Kafka fails. */
    static Optional<RestartPoint> newest(Consumer<byte[], byte[]> consumer, String topic, EventCodec codec,
                                         HeartbeatVerifier verifier, Clock clock) {
        try (consumer) {
            Instant deadline = clock.instant().plusSeconds(READ_FOR_SECONDS);
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(READ_FOR_SECONDS));
            if (infos == null || infos.isEmpty()) {
                return Optional.empty();
            }
            List<TopicPartition> partitions = infos.stream().map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, left(deadline, clock));
            Map<TopicPartition, Long> query = new HashMap<>();
            partitions.forEach(tp -> query.put(tp, clock.millis() - WITHIN_SECONDS * 1000L));
            Map<TopicPartition, OffsetAndTimestamp> starts = consumer.offsetsForTimes(query, left(deadline, clock));
            partitions.forEach(tp -> consumer.seek(tp, starts.get(tp) != null ? starts.get(tp).offset() : ends.get(tp)));
            RestartPoint newest = null;
            while (!readTo(consumer, ends) && clock.instant().isBefore(deadline)) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    RestartPoint p = point(r, codec, verifier, clock);
                    if (p != null && (newest == null || p.at().isAfter(newest.at()))) {
                        newest = p;
                    }
                }
            }
            return Optional.ofNullable(newest);
        } catch (KafkaException e) {
            log.warn("No restart point read from {} ({}): discovery reads the whole look-back", topic, e.toString());
            return Optional.empty();
        }
    }

    private static boolean readTo(Consumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends) {
        return ends.entrySet().stream().allMatch(e -> consumer.position(e.getKey()) >= e.getValue());
    }

    private static Duration left(Instant deadline, Clock clock) {
        Duration d = Duration.between(clock.instant(), deadline);
        return d.isNegative() ? Duration.ZERO : d;
    }

    /** Returns the point a record carries, or {@code null} when it carries none that may be used. */
    private static RestartPoint point(ConsumerRecord<byte[], byte[]> r, EventCodec codec, HeartbeatVerifier verifier,
                                      Clock clock) {
        if (verifier != null && verifier.verify(r.key(), r.value(), EventReader.header(r, HeartbeatSigner.KEY_ID_HEADER),
                EventReader.header(r, HeartbeatSigner.SIGNATURE_HEADER)) instanceof Verification.Refused) {
            return null;
        }
        if (!(codec.decode(r.key(), r.value()) instanceof EventCodec.Event e)
                || !(e.event() instanceof GatewayEvent.ReplicaBeat b) || b.longestNodeIntervalMs() < 0) {
            return null;
        }
        Instant at = Instant.ofEpochMilli(b.tableReadToMs());
        return at.isAfter(clock.instant().plus(RestartPoint.CLOCK_MARGIN)) ? null
                : new RestartPoint(b.replica(), at, b.longestNodeIntervalMs());
    }
}
