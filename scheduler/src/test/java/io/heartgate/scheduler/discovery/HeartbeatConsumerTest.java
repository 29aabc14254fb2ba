package io.heartgate.scheduler.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.NodeState;
import io.heartgate.protocol.Rule;
import io.heartgate.scheduler.Beats;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import io.heartgate.testkit.MutableClock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class HeartbeatConsumerTest {

    private static final String TOPIC = "gpu-heartbeats";
    private static final TopicPartition P0 = new TopicPartition(TOPIC, 0);
    private static final TopicPartition P1 = new TopicPartition(TOPIC, 1);

    private final MutableClock clock = new MutableClock();
    private final NodeTable table = new NodeTable(clock, 3, Duration.ZERO);
    private final DiscoveryStats stats = new DiscoveryStats();
    private final HeartbeatCodec codec = new HeartbeatCodec();
    private TimedMockConsumer consumer;
    private HeartbeatConsumer discovery;
    private long nextOffset;

    /** MockConsumer without offsetsForTimes support of its own: answers with a fixed offset. */
    static final class TimedMockConsumer extends MockConsumer<byte[], byte[]> {
        long lookBackOffset;
        /** When set, the search finds nothing and this runs first: a record written as discovery starts. */
        Runnable duringSearch;

        TimedMockConsumer() {
            super("latest");
        }

        @Override
        public synchronized Map<TopicPartition, OffsetAndTimestamp> offsetsForTimes(Map<TopicPartition, Long> query) {
            Map<TopicPartition, OffsetAndTimestamp> out = new HashMap<>();
            if (duringSearch != null) {
                duringSearch.run();
                return out;
            }
            query.forEach((tp, ts) -> out.put(tp, new OffsetAndTimestamp(lookBackOffset, ts)));
            return out;
        }

        @Override
        public Map<TopicPartition, OffsetAndTimestamp> offsetsForTimes(Map<TopicPartition, Long> query, Duration t) {
            return offsetsForTimes(query);
        }

        /** While set, the broker answers no offsets request (MockConsumer's own exception is one-shot). */
        boolean down;

        @Override
        public synchronized Map<TopicPartition, Long> endOffsets(Collection<TopicPartition> partitions) {
            if (down) {
                throw new TimeoutException("broker down");
            }
            return super.endOffsets(partitions);
        }

        @Override
        public Map<TopicPartition, Long> endOffsets(Collection<TopicPartition> partitions, Duration t) {
            return endOffsets(partitions);
        }
    }

    @BeforeEach
    void setUp() {
        consumer = new TimedMockConsumer();
        consumer.updatePartitions(TOPIC, List.of(partition(0)));
        consumer.updateBeginningOffsets(Map.of(P0, 0L));
        consumer.updateEndOffsets(Map.of(P0, 0L));
        discovery = new HeartbeatConsumer(consumer, TOPIC, table, clock, Duration.ofMinutes(3), Duration.ofSeconds(3),
                stats, UpstreamAllowList.ALLOW_ALL, null);
    }

    private static PartitionInfo partition(int p) {
        return new PartitionInfo(TOPIC, p, null, null, null);
    }

    private void record(TopicPartition tp, String key, byte[] value, long brokerMillis) {
        consumer.addRecord(new ConsumerRecord<>(TOPIC, tp.partition(), nextOffset++, brokerMillis,
                TimestampType.LOG_APPEND_TIME, -1, -1, key == null ? null : key.getBytes(StandardCharsets.UTF_8),
                value, new RecordHeaders(), Optional.empty()));
    }

    private void beat(Heartbeat hb) {
        record(P0, hb.nodeId(), codec.encode(hb), clock.millis());
    }

    @Test
    void rebuildsTheTableFromTheLookBackAndThenIsCaughtUp() {
        consumer.updateEndOffsets(Map.of(P0, 3L));
        discovery.step(); // assigns and seeks
        assertThat(discovery.status().caughtUp()).isFalse();
        beat(Beats.of("a").build());
        beat(Beats.of("b").build());
        beat(Beats.of("c").build());

        discovery.step();

        assertThat(discovery.status().caughtUp()).isTrue();
        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("a", "b", "c");
        assertThat(consumer.assignment()).containsExactly(P0);
        assertThat(stats.acceptedCount()).isEqualTo(3);
    }

    @Test
    void aCatchUpSlowerThanTheShortestIntervalReadsOnToWhereTheTopicIsNow() {
        consumer.updateEndOffsets(Map.of(P0, 2L));
        discovery.step(); // assigns and seeks: two records to catch up
        beat(Beats.of("a").build());
        beat(Beats.of("b").build());
        clock.advance(Duration.ofSeconds(2)); // reading them took longer than the nodes' interval (1 s)
        consumer.updateEndOffsets(Map.of(P0, 3L)); // and a third came meanwhile

        discovery.step();
        assertThat(discovery.status().caughtUp()).as("records read late may have missed live nodes").isFalse();
        beat(Beats.of("c").build());
        discovery.step();

        assertThat(discovery.status().caughtUp()).isTrue();
        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("a", "b", "c");
    }

    @Test
    void aRecordWrittenWhileDiscoveryStartsOnAPartitionWithNothingRecentIsRead() {
        // A heartbeat lands while discovery looks for the start of its look-back on an empty partition.
        consumer.duringSearch = () -> {
            beat(Beats.of("a").build());
            consumer.updateEndOffsets(Map.of(P0, 1L));
        };
        discovery.step();
        consumer.duringSearch = null;
        discovery.step();

        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("a");
    }

    private static Heartbeat at(String id, String url, long seq) {
        return Heartbeat.builder(id, url).instance("i1").seq(seq).state(NodeState.UP)
                .intervalMs(1000).build();
    }

    @Test
    void aHeartbeatAdvertisingAnAddressOutsideTheAllowListIsRejectedAndLeavesTheTableAlone() {
        discovery = new HeartbeatConsumer(consumer, TOPIC, table, clock, Duration.ofMinutes(3), Duration.ofSeconds(3),
                stats, UpstreamAllowList.parse("10.0.0.0/8,*.gpu.internal"), null);
        discovery.step();
        beat(at("good", "http://a.gpu.internal:11434", 1));
        beat(at("metadata", "http://169.254.169.254/", 1));
        beat(at("good", "http://127.0.0.1:11434", 2)); // a later record re-pointing an accepted node

        discovery.step();

        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("good");
        assertThat(table.snapshot().node("good").url()).isEqualTo("http://a.gpu.internal:11434");
        assertThat(stats.rejectedCount(Rule.URL_NOT_ALLOWED)).isEqualTo(2);
        assertThat(stats.acceptedCount()).isEqualTo(1);
    }

    @Test
    void usesTheRecordsBrokerTimestamp() {
        discovery.step();
        record(P0, "old", codec.encode(Beats.of("old").build()), clock.millis() - 10_000);
        record(P0, "new", codec.encode(Beats.of("new").build()), clock.millis() - 1_000);

        discovery.step();

        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("new");
        assertThat(table.snapshot().node("new").lastSeen()).isEqualTo(clock.instant().minusSeconds(1));
        assertThat(stats.outcomeCount(NodeTable.Outcome.EXPIRED_ON_ARRIVAL)).isEqualTo(1);
    }

    @Test
    void removesANodeOnItsTombstone() {
        discovery.step();
        beat(Beats.of("a").build());
        discovery.step();
        record(P0, "a", null, clock.millis());

        discovery.step();

        assertThat(table.snapshot().nodes()).isEmpty();
        assertThat(stats.tombstoneCount()).isEqualTo(1);
    }

    @Test
    void rejectsGarbageByRuleAndCarriesOn() {
        discovery.step();
        record(P0, "x", "not json".getBytes(StandardCharsets.UTF_8), clock.millis());
        record(P0, null, codec.encode(Beats.of("a").build()), clock.millis());
        record(P0, "b", codec.encode(Beats.of("a").build()), clock.millis());
        for (int i = 0; i < 100; i++) {
            record(P0, "x", new byte[] {(byte) i, 0, 1}, clock.millis());
        }
        beat(Beats.of("good").build());

        discovery.step();

        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("good");
        assertThat(stats.rejectedCount(Rule.MALFORMED_JSON)).isEqualTo(101);
        assertThat(stats.rejectedCount(Rule.INVALID_KEY)).isEqualTo(1);
        assertThat(stats.rejectedCount(Rule.KEY_MISMATCH)).isEqualTo(1);
        assertThat(stats.receivedCount()).isEqualTo(104);
    }

    @Test
    void expiresSilentNodes() {
        discovery.step();
        beat(Beats.of("a").intervalMs(500).build());
        discovery.step();

        clock.advance(Duration.ofMillis(1500));
        discovery.step();

        assertThat(table.snapshot().nodes()).isEmpty();
        assertThat(stats.expirationCount()).isEqualTo(1);
    }

    @Test
    void aNodeDueJustAfterKafkaFallsSilentIsNotExpiredBeforeTheOutageIsNoticed() {
        discovery.step();
        beat(Beats.of("a").intervalMs(500).build());
        discovery.step();
        clock.advance(Duration.ofMillis(400));
        beat(Beats.of("b").intervalMs(500).build()); // the last record before the broker stops
        discovery.step();

        consumer.down = true;
        clock.advance(Duration.ofMillis(1200)); // a's expiry (1.5 s) has passed; Kafka went quiet 1.2 s ago
        discovery.step();
        assertThat(table.snapshot().nodes()).as("a waits: Kafka has not been heard since its expiry")
                .extracting(Node::id).containsExactly("a", "b");
        clock.advance(Duration.ofMillis(400));
        discovery.step();
        assertThat(discovery.status().selfPreservation()).isTrue();
        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("a", "b");
        assertThat(stats.expirationCount()).isZero();
    }

    @Test
    void aNodeIsNotExpiredWhileItsHeartbeatIsAtTheBrokerButNotYetRead() {
        discovery.step();
        beat(Beats.of("a").intervalMs(500).build());
        discovery.step();
        clock.advance(Duration.ofMillis(1500));
        consumer.updateEndOffsets(Map.of(P0, nextOffset + 1)); // a's next heartbeat is written, not fetched yet
        discovery.step();
        assertThat(table.snapshot().nodes()).as("the broker answered, but the topic is not read that far")
                .extracting(Node::id).containsExactly("a");
        beat(Beats.of("a").intervalMs(500).seq(2L).build());
        discovery.step();
        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("a");
        assertThat(stats.expirationCount()).isZero();
    }

    @Test
    void aNodeDueWhileKafkaAnswersGoesAtOnceEvenWithNoOtherRecords() {
        discovery.step();
        beat(Beats.of("a").intervalMs(500).build());
        discovery.step();
        clock.advance(Duration.ofMillis(1500)); // no record since; the broker answers when asked
        discovery.step();
        assertThat(table.snapshot().nodes()).isEmpty();
    }

    @Test
    void freezesExpiryWhileKafkaIsSilentAndThawsAfterCatchingUp() {
        discovery.step();
        beat(Beats.of("a").build());
        discovery.step();
        assertThat(discovery.status().selfPreservation()).isFalse();

        consumer.down = true;
        clock.advance(Duration.ofSeconds(10));
        discovery.step();

        assertThat(discovery.status().selfPreservation()).isTrue();
        assertThat(table.snapshot().nodes()).as("the table is not emptied").extracting(Node::id).containsExactly("a");

        consumer.down = false;
        consumer.updateEndOffsets(Map.of(P0, nextOffset + 1));
        clock.advance(Duration.ofSeconds(1));
        discovery.step(); // contact again: catch up to the new end
        assertThat(discovery.status().selfPreservation()).isTrue();
        beat(Beats.of("a").seq(2L).build());
        discovery.step();

        assertThat(discovery.status().selfPreservation()).isFalse();
        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("a");
        clock.advance(Duration.ofSeconds(3));
        discovery.step();
        assertThat(table.snapshot().nodes()).as("normal expiry resumed").isEmpty();
    }

    @Test
    void picksUpPartitionsAddedLater() {
        discovery.step();
        consumer.updatePartitions(TOPIC, List.of(partition(0), partition(1)));
        consumer.updateBeginningOffsets(Map.of(P0, 0L, P1, 0L));
        consumer.updateEndOffsets(Map.of(P0, 0L, P1, 0L));

        clock.advance(Duration.ofSeconds(11));
        discovery.step();
        record(P1, "late", codec.encode(Beats.of("late").build()), clock.millis());
        discovery.step();

        assertThat(consumer.assignment()).containsExactlyInAnyOrder(P0, P1);
        assertThat(table.snapshot().nodes()).extracting(Node::id).containsExactly("late");
    }
}
