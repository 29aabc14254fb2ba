package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.heartgate.agent.AgentMain;
import io.heartgate.protocol.cli.Cli;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.scheduler.trust.KafkaUsers;
import io.heartgate.scheduler.trust.SecretFile;
import io.heartgate.testkit.CommandLineRun;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
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
        Cli.commandLine("scheduler", main).parseArgs();
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
    void theImageCopiesEveryModuleTheBuildLists() throws Exception {
        String pom = Files.readString(ROOT.resolve("pom.xml"));
        String defaultModules = pom.substring(pom.indexOf("<modules>"), pom.indexOf("</modules>"));
        Matcher m = Pattern.compile("<module>([^<]+)</module>").matcher(defaultModules);
        String dockerfile = Files.readString(ROOT.resolve("Dockerfile"));
        int modules = 0;
        while (m.find()) {
            modules++;
            assertThat(dockerfile).as("the Maven stage needs every module").contains("COPY " + m.group(1) + " " + m.group(1));
        }
        assertThat(modules).isGreaterThanOrEqualTo(6);
    }

    /** The agent image's runtime holds every module the agent jar uses, as jdeps reads them from the jar. */
    @Test
    void theAgentImagesRuntimeHasEveryModuleTheAgentUses() throws Exception {
        Path jar = ROOT.resolve("heartbeat-agent/target/heartbeat-agent.jar");
        assertThat(jar).as("built before the scheduler's tests (the agent module comes first)").exists();
        ToolProvider jdeps = ToolProvider.findFirst("jdeps").orElseThrow();
        StringWriter out = new StringWriter();
        int rc = jdeps.run(new PrintWriter(out), new PrintWriter(new StringWriter()), "--ignore-missing-deps",
                "--print-module-deps", "--multi-release", "17", jar.toString());
        assertThat(rc).as("jdeps: %s", out).isZero();
        List<String> used = List.of(out.toString().strip().split(","));
        Matcher m = Pattern.compile("jlink --add-modules ([\\w.,]+)").matcher(Files.readString(ROOT.resolve("Dockerfile")));
        assertThat(m.find()).isTrue();
        assertThat(List.of(m.group(1).split(","))).containsAll(used).contains("jdk.crypto.ec", "java.xml");
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
    void theSecuredProfileUsesRealSettingsAndExampleFilesThatParse() throws Exception {
        JsonNode root = compose();
        JsonNode services = root.path("services");
        String schedulerHelp = CommandLineRun.run(SchedulerMain.commandLine(), "--help").out()
                .replaceAll("\\s+", " ");
        String agentHelp = CommandLineRun.run(Cli.commandLine("heartbeat-agent", new AgentMain()),
                "--help").out().replaceAll("\\s+", " ");
        JsonNode scheduler = services.path("scheduler-secured");
        JsonNode agent = services.path("agent-secured");
        scheduler.path("environment").fieldNames().forEachRemaining(name ->
                assertThat(schedulerHelp).as("the scheduler's --help names " + name).contains("env " + name));
        agent.path("environment").fieldNames().forEachRemaining(name ->
                assertThat(agentHelp).as("the agent's --help names " + name).contains("env " + name));
        for (JsonNode service : List.of(scheduler, agent, services.path("sim-secured"))) {
            assertThat(strings(service.path("profiles"))).containsExactly("secured");
        }

        Map<String, Path> secrets = new HashMap<>();
        root.path("secrets").fields().forEachRemaining(e -> secrets.put(e.getKey(), ROOT.resolve(e.getValue().path("file").asText())));
        KafkaUsers.load(secrets.get("kafka-users"));
        HeartbeatKeys keys = HeartbeatKeys.load(
                secrets.get("heartbeat-keys"));
        assertThat(keys.first().allows(agent.path("environment").path("NODE_ID").asText())).isTrue();
        assertThat(ApiKeys.load(secrets.get("api-keys")).find("hg-example-key-change-me"))
                .isNotNull();
        SecretFile.read(secrets.get("admin-token"), "adminToken", 16);
        Properties agentKafka = new Properties();
        try (var in = Files.newInputStream(secrets.get("agent-kafka"))) {
            agentKafka.load(in);
        }
        assertThat(agentKafka.getProperty("security.protocol")).isEqualTo("SASL_SSL");
        String agentUser = Files.readAllLines(secrets.get("kafka-users")).stream()
                .filter(l -> l.startsWith("agent ")).findFirst().orElseThrow();
        assertThat(agentKafka.getProperty("sasl.jaas.config")).contains("username=\"agent\"")
                .contains("password=\"" + agentUser.split(" ")[1] + "\"");
    }

    @Test
    void hostsExampleMapsKafkaToLoopback() throws Exception {
        assertThat(Files.readAllLines(ROOT.resolve("hosts.example"))).contains("127.0.0.1 kafka");
    }
}
