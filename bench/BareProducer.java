import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The least any heartbeat publisher on the Kafka Java client can be: one producer, no JMX reporter,
 * a 1 MiB buffer, one 600-byte record a second, nothing else (no probes, no JSON, no logging
 * framework). Run by bench/agent-floor.sh as a single-file program: its footprint is the floor
 * under the agent's.
 */
public class BareProducer {
    public static void main(String[] args) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of("bootstrap.servers", args[0],
                "key.serializer", ByteArraySerializer.class.getName(),
                "value.serializer", ByteArraySerializer.class.getName(),
                "metric.reporters", "", "buffer.memory", "1048576", "linger.ms", "0"))) {
            byte[] value = new byte[600];
            while (true) {
                producer.send(new ProducerRecord<>("bare-producer", "n".getBytes(), value)).get();
                Thread.sleep(1000);
            }
        }
    }
}
