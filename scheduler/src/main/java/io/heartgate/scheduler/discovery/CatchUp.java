package io.heartgate.scheduler.discovery;

import java.time.Instant;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;

/**
 * End offsets discovery reads to, and when they were asked for: at start (the table is complete
 * once they are reached), after a Kafka outage (expiry resumes then), and each time Kafka is asked
 * how far the topic goes (the topic is known read to that moment once they are reached).
 */
final class CatchUp {

    private Map<TopicPartition, Long> target;
    private Instant askedAt = Instant.MIN;

    /** Reads to {@code ends}, asked for at {@code at}. */
    void to(Map<TopicPartition, Long> ends, Instant at) {
        target = ends;
        askedAt = at;
    }

    /** Says whether there are offsets to read to. */
    boolean pending() {
        return target != null;
    }

    /** Returns when the offsets read to were asked for. */
    Instant askedAt() {
        return askedAt;
    }

    /**
     * Says whether {@code consumer} has read to the offsets of the partitions it still reads among
     * {@code assigned}, and then stops waiting for them.
     */
    boolean reached(Consumer<byte[], byte[]> consumer, Set<TopicPartition> assigned) {
        if (target == null || !reached(consumer, target, assigned)) {
            return false;
        }
        target = null;
        return true;
    }

    /** Says whether {@code consumer} has read each partition of {@code ends} it reads among {@code assigned} to its offset. */
    static boolean reached(Consumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends, Set<TopicPartition> assigned) {
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            if (assigned.contains(e.getKey()) && consumer.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }
}
