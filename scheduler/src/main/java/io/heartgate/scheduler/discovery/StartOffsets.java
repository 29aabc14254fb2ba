package io.heartgate.scheduler.discovery;

import io.heartgate.protocol.Durations;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Where discovery begins reading the heartbeat topic at start-up. */
final class StartOffsets {

    private static final Logger log = LoggerFactory.getLogger(StartOffsets.class);

    private StartOffsets() {
    }

    /**
     * Seeks each of {@code partitions} to where a scheduler starting at {@code now} begins to read:
     * as far back as the replicas' newest restart point {@code point} needs
     * ({@link RestartPoint#readFrom}), or the whole {@code lookBack} without one. Returns the end
     * offsets to catch up to, as {@link #seek(Consumer, String, Set, Instant, Instant, Optional)}.
     */
    static Map<TopicPartition, Long> seekToStart(Consumer<byte[], byte[]> consumer, String topic,
                                                 Set<TopicPartition> partitions, Optional<RestartPoint> point,
                                                 Instant now, Duration lookBack, int missedHeartbeats) {
        Instant start = point.map(p -> p.readFrom(now, lookBack, missedHeartbeats)).orElse(now.minus(lookBack));
        return seek(consumer, topic, partitions, start, now, point);
    }

    /**
     * Seeks each of {@code partitions} to its first record at or after {@code start} and returns
     * their end offsets, taken before the search: a partition with nothing that recent starts at
     * that end, not at a lazily resolved {@code seekToEnd}, so a record written while discovery
     * starts (a tombstone, a replay to count) is read, not skipped. Logs how far back that is, why
     * ({@code point}, or the look-back), and how many records it leaves to read.
     */
    static Map<TopicPartition, Long> seek(Consumer<byte[], byte[]> consumer, String topic, Set<TopicPartition> partitions,
                                          Instant start, Instant now, Optional<RestartPoint> point) {
        Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
        Map<TopicPartition, Long> query = new HashMap<>();
        partitions.forEach(tp -> query.put(tp, Math.max(0, start.toEpochMilli())));
        Map<TopicPartition, OffsetAndTimestamp> offsets = consumer.offsetsForTimes(query);
        long toRead = 0;
        for (TopicPartition tp : partitions) {
            OffsetAndTimestamp o = offsets.get(tp);
            long end = ends.getOrDefault(tp, 0L);
            long from = o != null ? o.offset() : end;
            consumer.seek(tp, from);
            toRead += Math.max(0, end - from);
        }
        String why = point.map(p -> "the restart point replica " + p.replica() + " wrote, its nodes' longest interval "
                + p.longestNodeIntervalMs() + " ms").orElse("the look-back");
        log.info("Discovery reading {} partitions of {} from {} ago ({}; {} records to catch up)", partitions.size(),
                topic, Durations.format(Duration.between(start, now).truncatedTo(ChronoUnit.MILLIS)), why, toRead);
        return ends;
    }
}
