package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.heartgate.scheduler.config.SchedulerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Checks that docker-compose-env.yml and hosts.example agree with the scheduler's contract defaults. */
class ComposeFileTest {

    private static final Path ROOT = Path.of("..");

    private static JsonNode compose() throws Exception {
        return new ObjectMapper(new YAMLFactory()).readTree(ROOT.resolve("docker-compose-env.yml").toFile());
    }

    /** The defaults docs/REFERENCE.md gives, as the scheduler's command line applies them with no flag set. */
    private static SchedulerConfig defaults() {
        SchedulerMain main = new SchedulerMain();
        io.heartgate.protocol.cli.Cli.commandLine("scheduler", main).parseArgs();
        return main.config();
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    @Test
    void kafkaIsASingleKraftNodeReachableAsKafka9092() throws Exception {
        JsonNode kafka = compose().path("services").path("kafka");
        JsonNode env = kafka.path("environment");

        assertThat(kafka.path("image").asText()).startsWith("apache/kafka:");
        assertThat(strings(kafka.path("ports"))).containsExactly("9092:9092");
        assertThat(env.path("KAFKA_PROCESS_ROLES").asText()).isEqualTo("broker,controller");
        assertThat(env.path("KAFKA_ADVERTISED_LISTENERS").asText()).isEqualTo("PLAINTEXT://kafka:9092");
        assertThat(env.has("KAFKA_ZOOKEEPER_CONNECT")).isFalse();
    }

    @Test
    void schedulerUsesTheContractDefaults() throws Exception {
        SchedulerConfig d = defaults();
        JsonNode scheduler = compose().path("services").path("scheduler");
        JsonNode env = scheduler.path("environment");

        assertThat(d.topic()).isEqualTo("gpu-heartbeats");
        assertThat(env.path("KAFKA_BOOTSTRAP_SERVERS").asText()).isEqualTo("kafka:9092");
        assertThat(env.path("HEARTBEAT_TOPIC").asText()).isEqualTo(d.topic());
        assertThat(env.path("SCHEDULER_PORT").asText()).isEqualTo(String.valueOf(d.proxy().port()));
        assertThat(env.path("SCHEDULER_ADMIN_PORT").asText()).isEqualTo(String.valueOf(d.adminPort()));
        assertThat(env.path("SCHEDULER_BIND").asText()).isEqualTo(d.bind());
        assertThat(env.path("SCHEDULER_STRATEGY").asText()).isEqualTo(d.strategy().label());
        assertThat(env.path("SCHEDULER_MISSED_HEARTBEATS").asText()).isEqualTo(String.valueOf(d.missedHeartbeats()));
        assertThat(env.path("SCHEDULER_RETRIES").asText()).isEqualTo(String.valueOf(d.proxy().retries()));
        assertThat(strings(scheduler.path("ports"))).containsExactly(
                d.proxy().port() + ":" + d.proxy().port(), d.adminPort() + ":" + d.adminPort());
        assertThat(strings(scheduler.path("healthcheck").path("test"))).contains(
                "http://127.0.0.1:" + d.adminPort() + "/readyz");
        assertThat(scheduler.path("build").path("dockerfile").asText()).isEqualTo("Dockerfile");
        assertThat(Files.readString(ROOT.resolve("Dockerfile"))).contains("USER heartgate").contains("HEALTHCHECK")
                .contains("/readyz");
    }

    @Test
    void theDemoProfileAddsSimsWithAgentsOnTheSameTopic() throws Exception {
        JsonNode services = compose().path("services");
        for (int i = 1; i <= 3; i++) {
            JsonNode sim = services.path("sim-" + i);
            JsonNode agent = services.path("agent-" + i);
            assertThat(strings(sim.path("profiles"))).containsExactly("demo");
            assertThat(strings(agent.path("profiles"))).containsExactly("demo");
            assertThat(agent.path("environment").path("NODE_URL").asText()).isEqualTo("http://sim-" + i + ":11434");
            assertThat(agent.path("environment").path("KAFKA_BOOTSTRAP_SERVERS").asText()).isEqualTo("kafka:9092");
            assertThat(agent.path("environment").path("HEARTBEAT_TOPIC").asText()).isEqualTo("gpu-heartbeats");
            assertThat(strings(sim.path("command"))).contains("--name", "sim-" + i, "--port", "11434");
        }
        assertThat(services.path("scheduler").has("profiles")).as("the scheduler runs without the demo").isFalse();
    }

    @Test
    void hostsExampleMapsKafkaToLoopback() throws Exception {
        assertThat(Files.readAllLines(ROOT.resolve("hosts.example"))).contains("127.0.0.1 kafka");
    }
}
