package io.heartgate.embedded;

import static io.heartgate.testkit.SecuredTestKafka.AGENT;
import static io.heartgate.testkit.SecuredTestKafka.AGENT_PASSWORD;
import static io.heartgate.testkit.SecuredTestKafka.SCHEDULER;
import static io.heartgate.testkit.SecuredTestKafka.SCHEDULER_PASSWORD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.SecuredTestKafka;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
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
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Clients against the shared secured broker of {@link KafkaExtension}: SASL_SSL with SCRAM, PLAIN and
 * unsecured OAUTHBEARER on one listener, TLS trust from a file or inline PEM, and optional client
 * certificates.
 */
@ExtendWith(KafkaExtension.class)
class SaslSslClientsIT {

    /** How long a client that cannot get in may try: a few seconds, so that failures stay quick. */
    private static final String BLOCK_MS = "3000";

    @ParameterizedTest
    @ValueSource(strings = {"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "OAUTHBEARER"})
    void aProducerAndAConsumerExchangeARecordOverSaslSsl(String mechanism, SecuredTestKafka kafka,
                                                         @TempDir Path dir) throws Exception {
        String topic = "secured-" + mechanism.toLowerCase(Locale.ROOT) + "-" + UUID.randomUUID();
        createTopic(kafka, topic);
        // The producer reads a written file, as an agent's --kafka-config does; the consumer takes the map.
        Properties producerProps = producerProps(kafka, Map.of());
        producerProps.putAll(load(kafka.writeClientConfig(dir, AGENT, AGENT_PASSWORD, mechanism)));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            producer.send(new ProducerRecord<>(topic, "gpu-a", "over " + mechanism)).get(30, TimeUnit.SECONDS);
        }
        Properties props = consumerProps(kafka, kafka.clientProperties(SCHEDULER, SCHEDULER_PASSWORD, mechanism));
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "group-" + topic);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            assertThat(pollUntilOne(consumer)).containsExactly("over " + mechanism);
        }
    }

    @Test
    void inlinePemTrustAndAnInlinePemClientCertificateExchangeARecord(SecuredTestKafka kafka, @TempDir Path dir)
            throws Exception {
        String topic = "secured-pem-" + UUID.randomUUID();
        createTopic(kafka, topic);
        // Mutual TLS and SCRAM together, every PEM inline and read back from a written file.
        Map<String, String> mutual = kafka.inlinePemClientProperties(AGENT, AGENT_PASSWORD, "SCRAM-SHA-512",
                kafka.clientCertificate());
        Properties producerProps = producerProps(kafka, Map.of());
        producerProps.putAll(load(kafka.writeClientConfig(dir, mutual)));
        assertThat(producerProps).containsEntry(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM")
                .containsEntry(SslConfigs.SSL_KEYSTORE_KEY_CONFIG, mutual.get(SslConfigs.SSL_KEYSTORE_KEY_CONFIG))
                .doesNotContainKey(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            producer.send(new ProducerRecord<>(topic, "gpu-a", "mutual")).get(30, TimeUnit.SECONDS);
        }
        // Inline trust only, no certificate: "requested" client auth still lets a SASL client in.
        Map<String, String> trustOnly = kafka.inlinePemClientProperties(SCHEDULER, SCHEDULER_PASSWORD, "PLAIN",
                null);
        assertThat(trustOnly).doesNotContainKey(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(kafka, trustOnly))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            assertThat(pollUntilOne(consumer)).containsExactly("mutual");
        }
    }

    @Test
    void aClientCertificateThatOnlyClaimsATrustedNameFailsWithSslAuthenticationException(
            SecuredTestKafka kafka, @TempDir Path dir) {
        // Same subject as the trusted certificate, another key. A certificate from an unknown issuer
        // would prove nothing: the client's key manager offers only certificates whose issuer the broker
        // names as trusted, so it would connect without one, which "requested" allows.
        SelfSignedTls.PemFiles impostor = SelfSignedTls.generate(dir, List.of(AGENT));
        Properties props = producerProps(kafka, kafka.inlinePemClientProperties(AGENT, AGENT_PASSWORD,
                "SCRAM-SHA-512", impostor));
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, BLOCK_MS);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            Throwable thrown = catchThrowable(() -> producer.send(new ProducerRecord<>("never", "k", "v"))
                    .get(10, TimeUnit.SECONDS));
            // The broker checks a certificate it is shown even though it only requested one.
            assertThat(unwrap(thrown)).isInstanceOf(SslAuthenticationException.class);
        }
    }

    @Test
    void aTransactionCommitsThroughTheInterBrokerListener(SecuredTestKafka kafka) throws Exception {
        // Commit markers travel from the transaction coordinator to the partition leader over the
        // inter-broker listener, SASL_SSL here: a read_committed consumer sees the record only if it works.
        String topic = "secured-txn-" + UUID.randomUUID();
        createTopic(kafka, topic);
        Properties props = producerProps(kafka, kafka.clientProperties(AGENT));
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "txn-" + topic);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, "gpu-a", "committed"));
            producer.commitTransaction();
        }
        Properties consumerProps = consumerProps(kafka, kafka.clientProperties(SCHEDULER));
        consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            assertThat(pollUntilOne(consumer)).containsExactly("committed");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"SCRAM-SHA-256", "PLAIN"})
    void aWrittenClientConfigLogsInAndAWrongPasswordFailsWithSaslAuthenticationException(
            String mechanism, SecuredTestKafka kafka, @TempDir Path dir) throws Exception {
        Path good = kafka.writeClientConfig(dir, AGENT, AGENT_PASSWORD, mechanism);
        Properties adminProps = load(good);
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        try (Admin admin = Admin.create(adminProps)) {
            assertThat(admin.describeCluster().nodes().get(30, TimeUnit.SECONDS)).hasSize(1);
        }

        Path wrong = kafka.writeClientConfig(dir, AGENT, "not-" + AGENT_PASSWORD, mechanism);
        assertThat(wrong).isNotEqualTo(good);
        Properties props = producerProps(kafka, Map.of());
        props.putAll(load(wrong));
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, BLOCK_MS);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            Throwable thrown = catchThrowable(() -> producer.send(new ProducerRecord<>("never", "k", "v"))
                    .get(10, TimeUnit.SECONDS));
            assertThat(unwrap(thrown)).isInstanceOf(SaslAuthenticationException.class);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"SASL_PLAINTEXT", "PLAINTEXT"})
    void aClientWithoutTlsCannotProduce(String protocol, SecuredTestKafka kafka) {
        Map<String, String> security = new HashMap<>(kafka.clientProperties(AGENT));
        security.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("PLAINTEXT")) {
            security.keySet().removeIf(key -> key.startsWith("sasl.") || key.startsWith("ssl."));
        }
        Properties props = producerProps(kafka, security);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, BLOCK_MS);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            Throwable thrown = catchThrowable(() -> producer.send(new ProducerRecord<>("never", "k", "v"))
                    .get(10, TimeUnit.SECONDS));
            // The broker drops the connection at its TLS handshake, so the client never learns any metadata.
            assertThat(unwrap(thrown)).isInstanceOf(TimeoutException.class);
        }
    }

    private static void createTopic(SecuredTestKafka kafka, String topic) throws Exception {
        Properties props = new Properties();
        props.putAll(kafka.clientProperties(SCHEDULER));
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
    }

    private static List<String> pollUntilOne(KafkaConsumer<String, String> consumer) {
        List<String> seen = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                seen.add(r.value());
            }
            return !seen.isEmpty();
        });
        return seen;
    }

    private static Properties producerProps(SecuredTestKafka kafka, Map<String, String> security) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return props;
    }

    private static Properties consumerProps(SecuredTestKafka kafka, Map<String, String> security) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return props;
    }

    private static Properties load(Path file) throws Exception {
        Properties props = new Properties();
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            props.load(r);
        }
        return props;
    }

    /** Returns the cause of a failed future, or what was thrown when the call itself threw. */
    private static Throwable unwrap(Throwable thrown) {
        return thrown instanceof ExecutionException ? thrown.getCause() : thrown;
    }
}
