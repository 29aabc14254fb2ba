package io.heartgate.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.spi.ILoggingEvent;
import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.cli.KafkaAuthNoise;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.LogCapture;
import io.heartgate.testkit.SecuredTestKafka;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The agent against a broker that speaks only SASL_SSL: refused credentials are one clear line. */
@ExtendWith(KafkaExtension.class)
class SecuredAgentIT {

    @TempDir
    Path dir;

    private LogCapture logs;
    private Vertx vertx;
    private SimServer sim;
    private AgentRuntime agent;

    @BeforeEach
    void setUp() throws Exception {
        logs = new LogCapture(new KafkaAuthNoise()); // as the agent's logback.xml has it
        vertx = Vertx.vertx();
        sim = new SimServer(new SimConfigBuilder("sim-s", List.of("llama3:8b")).build(), Clock.systemUTC(),
                System::nanoTime);
        vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (agent != null) {
            agent.close();
        }
        vertx.close().await(10, TimeUnit.SECONDS);
        logs.close();
    }

    @Test
    void aWrongPasswordIsOneClearLineWithoutTheSecret(SecuredTestKafka kafka) throws Exception {
        Path wrong = kafka.writeClientConfig(dir, SecuredTestKafka.AGENT, "wrong-agent-password-7", "SCRAM-SHA-256");
        String url = "http://127.0.0.1:" + sim.port();
        agent = AgentRuntime.start(new AgentConfig(kafka.bootstrapServers(), "secured-agent-it", "gpu-s", url, url,
                Backend.OLLAMA, 1, null, Duration.ofMillis(200), Duration.ofSeconds(2), Duration.ofSeconds(5),
                "/nonexistent/nvidia-smi", false, false,
                KafkaSettings.load(wrong, Map.of(), ProducerConfig.configNames()), null), Clock.systemUTC());

        await().atMost(Duration.ofSeconds(20)).until(() -> agent.publisher().failedCount() >= 5);
        List<ILoggingEvent> lines = logs.aboutCredentials();
        assertThat(lines).as("warnings and errors about the credentials").hasSize(1);
        assertThat(logs.events()).allSatisfy(e -> assertThat(e.getThrowableProxy()).isNull());
        assertThat(lines.get(0).getFormattedMessage()).contains("Kafka refuses the agent's credentials")
                .contains("SCRAM-SHA-256").contains("--kafka-config");
        assertThat(lines.get(0).getThrowableProxy()).isNull();
        assertThat(logs.anyContains("wrong-agent-password-7")).isFalse();
    }
}
