package io.heartgate.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

class SecuredEmbeddedKafkaBrokerIT {

    /** Quotes, a backslash, a comma, a bracket and an equals sign: what JAAS and --add-scram choke on. */
    private static final String TRICKY_PASSWORD = "p\"a\\ss, w]rd=1";

    @Test
    void keepsUsersAndCertificateAcrossRestartsAndNeverLogsASecret(@TempDir Path dataDir) throws Exception {
        Logger brokerLog = (Logger) LoggerFactory.getLogger(EmbeddedKafkaBroker.class.getPackageName());
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.start();
        Level level = brokerLog.getLevel();
        brokerLog.setLevel(Level.DEBUG); // the child's every output line, formatting included
        brokerLog.setAdditive(false);
        brokerLog.addAppender(captured);
        EmbeddedKafkaConfig first = EmbeddedKafkaConfig.forTests().withDataDir(dataDir)
                .withSecurity(EmbeddedKafkaConfig.Security.selfSigned(Map.of("alice", TRICKY_PASSWORD)));
        // The second start names only bob: alice must come from the data dir, not from this start.
        EmbeddedKafkaConfig second = first.withSecurity(
                EmbeddedKafkaConfig.Security.selfSigned(Map.of("bob", "bob-secret")));
        byte[] certificate;
        try {
            try (EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start(first)) {
                Path pem = broker.certificatePem().orElseThrow();
                assertThat(pem).startsWith(dataDir);
                certificate = Files.readAllBytes(pem);
                produce(broker, broker.clientProperties("alice", TRICKY_PASSWORD, "SCRAM-SHA-256"), "before restart");
                // PLAIN checks the password against the broker's own settings: the quoting must survive too.
                produce(broker, broker.clientProperties("alice", TRICKY_PASSWORD, "PLAIN"), "plain before restart");
            }
            try (EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start(second)) {
                assertThat(Files.readAllBytes(broker.certificatePem().orElseThrow()))
                        .as("the self-signed certificate is reused").isEqualTo(certificate);
                assertThat(consumeFirst(broker, broker.clientProperties("alice", TRICKY_PASSWORD, "SCRAM-SHA-512")))
                        .isEqualTo("before restart");
                produce(broker, broker.clientProperties("bob", "bob-secret", "SCRAM-SHA-512"), "after restart");
                produce(broker, broker.clientProperties("bob", "bob-secret", "PLAIN"), "plain after restart");
            }
        } finally {
            brokerLog.detachAppender(captured);
            brokerLog.setAdditive(true);
            brokerLog.setLevel(level);
        }

        String brokerPassword = Files.readString(dataDir.resolve(BrokerSecurity.BROKER_SECRET_FILE),
                StandardCharsets.UTF_8).trim();
        List<String> lines = new ArrayList<>();
        captured.list.forEach(e -> lines.add(e.getFormattedMessage()));
        assertThat(lines).as("the child's output reached the log").anyMatch(l -> l.contains("Formatting"));
        assertThat(lines).noneMatch(l -> l.contains(TRICKY_PASSWORD) || l.contains("bob-secret")
                || l.contains(brokerPassword) || l.contains("PRIVATE KEY"));
        if (dataDir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            for (Path secret : List.of(dataDir.resolve("server.properties"),
                    dataDir.resolve(BrokerSecurity.BROKER_SECRET_FILE), dataDir.resolve("tls").resolve("key.pem"))) {
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(secret)))
                        .as(secret.toString()).isEqualTo("rw-------");
            }
        }
    }

    private static void produce(EmbeddedKafkaBroker broker, Map<String, String> security, String value)
            throws Exception {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.send(new ProducerRecord<>("kept", "k", value)).get(30, TimeUnit.SECONDS);
        }
    }

    private static String consumeFirst(EmbeddedKafkaBroker broker, Map<String, String> security) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> seen = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            TopicPartition tp = new TopicPartition("kept", 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    seen.add(r.value());
                }
                return !seen.isEmpty();
            });
        }
        return seen.get(0);
    }
}
