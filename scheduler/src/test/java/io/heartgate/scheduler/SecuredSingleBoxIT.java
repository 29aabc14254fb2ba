package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.agent.AgentConfig;
import io.heartgate.agent.AgentRuntime;
import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.scheduler.config.SchedulerConfigBuilder;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.demo.Demo;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A secured single-box install: the scheduler's embedded broker speaks SASL_SSL only, with the
 * SCRAM users of a file, and agents join with a client properties file as the log line tells.
 */
class SecuredSingleBoxIT {

    @TempDir
    Path dir;

    @Test
    void agentsWithAUserOfTheFileJoinAndTheDemoNodesToo() throws Exception {
        Path users = Files.writeString(dir.resolve("kafka-users"), "# SCRAM users\nscheduler scheduler-pw-0123\n"
                + "gpu-agent agent-pw-456789\n");
        Vertx vertx = Vertx.vertx();
        Scheduler scheduler = Scheduler.start(new SchedulerConfigBuilder(null, "single-box")
                .security(new SecurityConfig(null, null, null, false, null, null, null, null, users)).build(),
                Clock.systemUTC());
        AgentRuntime agent = null;
        Demo demo = null;
        try {
            Map<String, String> own = scheduler.kafkaClient().properties();
            assertThat(own).containsEntry("security.protocol", "SASL_SSL");
            Path trust = Path.of(own.get("ssl.truststore.location"));
            assertThat(trust).exists();
            Path agentConfig = Files.writeString(dir.resolve("agent-kafka.properties"), String.join("\n",
                    "security.protocol=SASL_SSL",
                    "sasl.mechanism=SCRAM-SHA-256",
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                            + "username=\"gpu-agent\" password=\"agent-pw-456789\";",
                    "ssl.truststore.type=PEM",
                    "ssl.truststore.location=" + trust, ""));
            SimServer sim = new SimServer(new SimConfigBuilder("gpu-x", List.of("llama3:8b")).build(), Clock.systemUTC(),
                    System::nanoTime);
            vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
            String url = "http://127.0.0.1:" + sim.port();
            agent = AgentRuntime.start(new AgentConfig(scheduler.kafkaBootstrap(), "single-box", "gpu-x", url, url,
                    Backend.OLLAMA, 1, null, Duration.ofMillis(200), Duration.ofSeconds(2), Duration.ofSeconds(5),
                    "/nonexistent/nvidia-smi", false, false,
                    KafkaSettings.load(agentConfig, Map.of(), ProducerConfig.configNames()), null), Clock.systemUTC());
            await().atMost(Duration.ofSeconds(20)).until(() -> scheduler.table().snapshot().routable().size() == 1);

            demo = Demo.start(2, scheduler.kafkaBootstrap(), "single-box", Clock.systemUTC(), scheduler.kafkaClient(),
                    null);
            await().atMost(Duration.ofSeconds(20)).until(() -> scheduler.table().snapshot().routable().size() == 3);
        } finally {
            if (demo != null) {
                demo.close();
            }
            if (agent != null) {
                agent.close();
            }
            scheduler.close();
            vertx.close().await(10, TimeUnit.SECONDS);
        }
    }
}
