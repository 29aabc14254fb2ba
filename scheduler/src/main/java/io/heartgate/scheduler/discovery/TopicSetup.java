package io.heartgate.scheduler.discovery;

import io.heartgate.protocol.cli.KafkaSettings;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates the heartbeat topic if it is missing, with the settings discovery relies on, and warns
 * about an existing topic that lacks them; creates the gateway events topic the same way.
 */
public final class TopicSetup {

    private static final Logger log = LoggerFactory.getLogger(TopicSetup.class);

    private TopicSetup() {
    }

    /**
     * Checks the operator's Kafka client properties (warning about any that neither the consumer nor
     * an admin client takes), then {@link #ensure(Admin, String, int, long) ensures} the topic through
     * an admin client of {@code bootstrap}. Kafka refusing the credentials is not fatal: discovery
     * logs it once, {@code /readyz} says why, and discovery keeps trying (credentials are often fixed
     * on the broker's side); the topic is then created by the agents' first records, or by an operator.
     *
     * @throws IllegalStateException when the topic cannot be checked or created for another reason
     */
    public static void ensure(String bootstrap, KafkaSettings kafkaClient, String topic, int partitions) {
        ensure(bootstrap, kafkaClient, topic, partitions, topicConfig());
    }

    /** As {@link #ensure(String, KafkaSettings, String, int)}, for a topic created with {@code config}. */
    public static void ensure(String bootstrap, KafkaSettings kafkaClient, String topic, int partitions,
                              Map<String, String> config) {
        Set<String> clientNames = new HashSet<>(ConsumerConfig.configNames());
        clientNames.addAll(AdminClientConfig.configNames());
        clientNames.addAll(ProducerConfig.configNames()); // the gateway events' producer
        kafkaClient.unknown(clientNames).forEach(name ->
                log.warn("Kafka client property {} is not a consumer, producer or admin setting; ignored", name));
        Map<String, Object> adminProps = new HashMap<>(kafkaClient.propertiesFor(AdminClientConfig.configNames()));
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        try (Admin kafkaAdmin = Admin.create(adminProps)) {
            ensure(kafkaAdmin, topic, partitions, config, 30_000);
        } catch (IllegalStateException e) {
            if (!(e.getCause() instanceof AuthenticationException)) {
                throw e;
            }
            log.debug("Topic {} not checked: Kafka refuses the scheduler's credentials ({}); discovery says so",
                    topic, e.getCause().getMessage());
        }
    }

    /** Returns the configuration a new heartbeat topic gets, each setting with its reason. */
    public static Map<String, String> topicConfig() {
        return Map.of(
                // Compaction keeps each node's latest record; deletion drops nodes gone for good.
                TopicConfig.CLEANUP_POLICY_CONFIG, "compact,delete",
                // Liveness is judged by the broker's clock, never by agents' clocks.
                TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime",
                // A day of heartbeats is plenty for the look-back at start-up.
                TopicConfig.RETENTION_MS_CONFIG, String.valueOf(TimeUnit.DAYS.toMillis(1)),
                // Small segments so compaction and deletion can act on recent data.
                TopicConfig.SEGMENT_MS_CONFIG, String.valueOf(TimeUnit.MINUTES.toMillis(10)),
                TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG, String.valueOf(TimeUnit.MINUTES.toMillis(10)));
    }

    /**
     * Creates {@code topic} with {@code partitions} partitions and the broker's default replication
     * if it does not exist yet.
     *
     * @throws IllegalStateException when Kafka does not answer within {@code timeoutMs}
     */
    public static void ensure(Admin admin, String topic, int partitions, long timeoutMs) {
        ensure(admin, topic, partitions, topicConfig(), timeoutMs);
    }

    /** As {@link #ensure(Admin, String, int, long)}, for a topic created with {@code config}. */
    public static void ensure(Admin admin, String topic, int partitions, Map<String, String> config, long timeoutMs) {
        try {
            admin.createTopics(List.of(new NewTopic(topic, Optional.of(partitions), Optional.empty())
                    .configs(config))).all().get(timeoutMs, TimeUnit.MILLISECONDS);
            log.info("Created topic {} with {} partitions", topic, partitions);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new IllegalStateException("cannot create topic " + topic + ": " + e.getCause(), e.getCause());
            }
            checkExisting(admin, topic, timeoutMs);
        } catch (TimeoutException e) {
            throw new IllegalStateException("Kafka did not answer within " + timeoutMs + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating the topic", e);
        }
    }

    private static void checkExisting(Admin admin, String topic, long timeoutMs) {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try {
            Config config = admin.describeConfigs(List.of(resource)).all()
                    .get(timeoutMs, TimeUnit.MILLISECONDS).get(resource);
            String type = config.get(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG).value();
            if (!"LogAppendTime".equals(type)) {
                log.warn("Topic {} uses message.timestamp.type={}: ages then follow the writers' clocks (capped at the "
                        + "scheduler's) and a replayed record can pass for new; set it to LogAppendTime", topic, type);
            }
        } catch (ExecutionException | TimeoutException e) {
            log.warn("Could not read the configuration of topic {}: {}", topic, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
