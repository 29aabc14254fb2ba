package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.spi.ILoggingEvent;
import io.heartgate.agent.AgentConfig;
import io.heartgate.agent.AgentRuntime;
import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.cli.KafkaAuthNoise;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.scheduler.config.SchedulerConfigBuilder;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.LogCapture;
import io.heartgate.testkit.SecuredTestKafka;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Agent and scheduler against a real broker that only speaks SASL_SSL with SCRAM users: their
 * client properties come from {@code --kafka-config} files, as an operator would write them.
 */
@ExtendWith(KafkaExtension.class)
class SecuredKafkaIT {

    private static final String HEARTBEAT_SECRET = "a-secret-shared-by-agent-and-scheduler-0123";

    @TempDir
    Path dir;

    private final String topic = "secured-it-" + UUID.randomUUID();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private LogCapture logs;
    private Vertx vertx;
    private SimServer sim;
    private AgentRuntime agent;
    private Scheduler scheduler;

    @BeforeEach
    void setUp() throws Exception {
        // As the programs' logback.xml has it (checked below): Kafka's client at ERROR, its
        // per-retry authentication lines dropped.
        logs = new LogCapture(new KafkaAuthNoise());
        vertx = Vertx.vertx();
        sim = new SimServer(new SimConfigBuilder("gpu-s", List.of("llama3:8b")).build(), Clock.systemUTC(),
                System::nanoTime);
        vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (agent != null) {
            agent.close();
        }
        if (scheduler != null) {
            scheduler.close();
        }
        vertx.close().await(10, TimeUnit.SECONDS);
        logs.close();
    }

    @Test
    void theProgramsLogConfigurationsDropKafkasPerRetryLines() throws Exception {
        for (String config : List.of("/logback.xml", "/logback-json.xml")) {
            try (var in = SecuredKafkaIT.class.getResourceAsStream(config)) {
                String xml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                assertThat(xml).contains("<turboFilter class=\"" + KafkaAuthNoise.class.getName() + "\"/>")
                        .contains("<logger name=\"org.apache.kafka\" level=\"ERROR\"/>");
            }
        }
    }

    private static KafkaSettings settings(Path file, Set<String> names) {
        return KafkaSettings.load(file, Map.of(), names);
    }

    private Scheduler startScheduler(SecuredTestKafka kafka, Path clientConfig, Path heartbeatKeys) {
        Set<String> names = new HashSet<>(ConsumerConfig.configNames());
        names.addAll(AdminClientConfig.configNames());
        return Scheduler.start(new SchedulerConfigBuilder(kafka.bootstrapServers(), topic)
                .security(new SecurityConfig(null, null, null, false, heartbeatKeys, null, null,
                        settings(clientConfig, names), null))
                .build(), Clock.systemUTC());
    }

    private HttpResponse<String> get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private double authFailures() throws Exception {
        return get(scheduler.adminPort(), "/metrics").body().lines()
                .filter(l -> l.startsWith("heartgate_kafka_auth_failures_total "))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf(' ') + 1))).sum();
    }

    private void assertNoSecretLogged(String... secrets) {
        for (String secret : secrets) {
            assertThat(logs.anyContains(secret)).as("a log line holds a secret").isFalse();
        }
    }

    @Test
    void agentsPublishSignedHeartbeatsOverSaslSslAndTheSchedulerRoutesToThem(SecuredTestKafka kafka) throws Exception {
        Path agentConfig = kafka.writeClientConfig(dir, SecuredTestKafka.AGENT, SecuredTestKafka.AGENT_PASSWORD,
                "SCRAM-SHA-256");
        Path schedulerConfig = kafka.writeClientConfig(dir, SecuredTestKafka.SCHEDULER,
                SecuredTestKafka.SCHEDULER_PASSWORD, "SCRAM-SHA-512");
        Path keys = Files.writeString(dir.resolve("heartbeat-keys"), "k1 " + HEARTBEAT_SECRET + " gpu-*\n");
        scheduler = startScheduler(kafka, schedulerConfig, keys);
        String url = "http://127.0.0.1:" + sim.port();
        agent = AgentRuntime.start(new AgentConfig(kafka.bootstrapServers(), topic, "gpu-s", url, url, Backend.OLLAMA,
                1, null, Duration.ofMillis(200), Duration.ofSeconds(2), Duration.ofSeconds(5), "/nonexistent/nvidia-smi",
                false, false, settings(agentConfig, ProducerConfig.configNames()), HeartbeatKeys.load(keys)),
                Clock.systemUTC());

        await().atMost(Duration.ofSeconds(20)).until(() -> scheduler.table().snapshot().routable().size() == 1);
        HttpResponse<String> chat = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                        + scheduler.proxyPort() + "/api/generate"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"llama3:8b\",\"prompt\":\"hi\",\"stream\":false}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(chat.statusCode()).isEqualTo(200);
        assertThat(chat.headers().firstValue("x-upstream-node")).hasValue("gpu-s");
        await().atMost(Duration.ofSeconds(10)).until(() -> get(scheduler.adminPort(), "/readyz").statusCode() == 200);
        assertThat(scheduler.stats().rejectedCount()).isZero();

        // The agent leaves: its signed tombstone takes the node out at once.
        agent.close();
        agent = null;
        await().atMost(Duration.ofSeconds(10)).until(() -> scheduler.table().snapshot().nodes().isEmpty());
        assertNoSecretLogged(SecuredTestKafka.AGENT_PASSWORD, SecuredTestKafka.SCHEDULER_PASSWORD, HEARTBEAT_SECRET);
    }

    @Test
    void aWrongPasswordIsOneClearLineAndAReadyzReason(SecuredTestKafka kafka) throws Exception {
        Path wrong = kafka.writeClientConfig(dir, SecuredTestKafka.SCHEDULER, "not-the-password-42", "SCRAM-SHA-512");
        scheduler = startScheduler(kafka, wrong, null);

        await().atMost(Duration.ofSeconds(20)).until(() -> {
            HttpResponse<String> r = get(scheduler.adminPort(), "/readyz");
            return r.statusCode() == 503 && new JsonObject(r.body()).getString("reason", "")
                    .startsWith("Kafka refuses the scheduler's credentials: ");
        });
        JsonObject readyz = new JsonObject(get(scheduler.adminPort(), "/readyz").body());
        assertThat(readyz.getString("reason")).contains("SCRAM-SHA-512");
        // Discovery tries again every 10 s: a second refusal is counted, and still one line is logged.
        await().atMost(Duration.ofSeconds(25)).until(() -> authFailures() >= 2);
        assertThat(get(scheduler.adminPort(), "/readyz").statusCode()).isEqualTo(503);

        List<ILoggingEvent> warnings = logs.aboutCredentials();
        assertThat(warnings).as("the warnings and errors about Kafka logged").hasSize(1);
        assertThat(warnings.get(0).getFormattedMessage()).contains("Kafka refuses the scheduler's credentials")
                .contains("--kafka-config");
        assertThat(warnings.get(0).getThrowableProxy()).isNull();
        assertNoSecretLogged("not-the-password-42");
    }
}
