package io.heartgate.scheduler.discovery;

import io.heartgate.protocol.cli.KafkaSettings;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Kafka consumer settings of discovery ({@link HeartbeatConsumer}): what its design needs (no
 * group, no commits, short fetch waits, bounded calls), with the operator's client properties over
 * the rest.
 */
public final class DiscoveryConsumerConfig {

    private DiscoveryConsumerConfig() {
    }

    /**
     * Returns the consumer settings discovery uses with the operator's client properties
     * ({@code --kafka-config}: TLS, SASL, tuning) over them, except those discovery's design needs.
     */
    public static Map<String, Object> consumerConfig(String bootstrapServers, String clientId, KafkaSettings operator) {
        Map<String, Object> c = consumerConfig(bootstrapServers, clientId);
        c.putAll(operator.propertiesFor(ConsumerConfig.configNames()));
        // Ours whatever the file says: discovery assigns itself every partition and commits nothing.
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        c.remove(ConsumerConfig.GROUP_ID_CONFIG);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        return c;
    }

    /** Returns the consumer settings discovery uses, each with a one-line why. */
    public static Map<String, Object> consumerConfig(String bootstrapServers, String clientId) {
        Map<String, Object> c = new HashMap<>();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        // No group: every replica reads every partition and keeps no offsets; it seeks by time at start.
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        // A lost position (retention passed it) resumes at the newest heartbeats, which are what matter.
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
        // Heartbeats should reach the table within milliseconds, not wait for a full fetch. Also how
        // long an empty fetch is held: 500 ms would save the ~1% of a core that 20 empty fetches a
        // second cost an idle scheduler, but delays readiness after a start by as long (measured).
        c.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 50);
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        // Bounded admin-style calls (partitionsFor, offsetsForTimes) so the loop never stalls for a minute.
        c.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5000);
        c.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
        c.put(ConsumerConfig.RECONNECT_BACKOFF_MS_CONFIG, 50L);
        c.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 1000L);
        return c;
    }
}
