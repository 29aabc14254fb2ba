import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The least any restart that reads heartbeats back can cost: a consumer in a new JVM that seeks to
 * LOOKBACK_MS before now on every partition, reads to the end offsets it asked for at the start, and
 * then, in rounds, to the end offsets of each round's start until a round takes less than ROUND_MS,
 * touching nothing but each record's key (the node id). No decoding, no table, no logging framework:
 * what the scheduler does on a restart costs at least this. Run by bench/restart-floor.sh.
 *
 * <p>{@code BareConsumer BOOTSTRAP TOPIC LOOKBACK_MS ROUND_MS} prints one line:
 * {@code ready_ms=... records=... rounds=... keys=...}, ready_ms counted from the JVM's start.
 */
public class BareConsumer {
    public static void main(String[] args) {
        long jvmStart = java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime();
        String topic = args[1];
        long lookBack = Long.parseLong(args[2]);
        long roundMs = Long.parseLong(args[3]);
        Map<String, Object> config = Map.of("bootstrap.servers", args[0],
                "key.deserializer", ByteArrayDeserializer.class.getName(),
                "value.deserializer", ByteArrayDeserializer.class.getName(),
                "enable.auto.commit", "false", "metric.reporters", "", "max.poll.records", "5000",
                "fetch.max.wait.ms", "50");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(partitions);
            long from = System.currentTimeMillis() - lookBack;
            Map<TopicPartition, Long> query = new HashMap<>();
            partitions.forEach(tp -> query.put(tp, from));
            Map<TopicPartition, OffsetAndTimestamp> starts = consumer.offsetsForTimes(query);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            for (TopicPartition tp : partitions) {
                OffsetAndTimestamp at = starts.get(tp);
                consumer.seek(tp, at != null ? at.offset() : ends.get(tp));
            }
            long records = 0;
            int rounds = 0;
            Set<String> keys = new HashSet<>();
            while (true) {
                rounds++;
                long roundStart = System.currentTimeMillis();
                while (!reached(consumer, partitions, ends)) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                        records++;
                        if (r.key() != null) {
                            keys.add(new String(r.key(), java.nio.charset.StandardCharsets.UTF_8));
                        }
                    }
                }
                if (System.currentTimeMillis() - roundStart < roundMs) {
                    break;
                }
                ends = consumer.endOffsets(partitions);
            }
            System.out.printf("ready_ms=%d records=%d rounds=%d keys=%d%n", System.currentTimeMillis() - jvmStart,
                    records, rounds, keys.size());
        }
    }

    private static boolean reached(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> partitions,
                                   Map<TopicPartition, Long> ends) {
        for (TopicPartition tp : partitions) {
            if (consumer.position(tp) < ends.get(tp)) {
                return false;
            }
        }
        return true;
    }
}
