package io.heartgate.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

class EmbeddedKafkaBrokerIT {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedKafkaBrokerIT.class);

    @Test
    void startsOnAFreeLoopbackPortAndRemovesItsTempDirOnClose() throws Exception {
        long started = System.nanoTime();
        EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start(EmbeddedKafkaConfig.forTests());
        long startMs = (System.nanoTime() - started) / 1_000_000;
        log.info("Embedded broker ready in {} ms", startMs);
        System.out.println("[heartgate-test] embedded broker ready in " + startMs + " ms");
        Path dir = broker.dataDir();
        try {
            assertThat(broker.bootstrapServers()).startsWith("127.0.0.1:");
            assertThat(broker.port()).isPositive();
            assertThat(broker.isAlive()).isTrue();
            try (Admin admin = admin(broker.bootstrapServers())) {
                admin.createTopics(List.of(new NewTopic("smoke", 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
                assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).contains("smoke");
            }
        } finally {
            broker.close();
        }
        assertThat(broker.isAlive()).isFalse();
        assertThat(dir).doesNotExist();
        broker.close(); // idempotent
    }

    @Test
    void keepsTopicsAcrossRestartsInAGivenDataDir(@TempDir Path dataDir) throws Exception {
        EmbeddedKafkaConfig config = EmbeddedKafkaConfig.forTests().withDataDir(dataDir);
        try (EmbeddedKafkaBroker first = EmbeddedKafkaBroker.start(config);
             Admin admin = admin(first.bootstrapServers())) {
            admin.createTopics(List.of(new NewTopic("kept", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        assertThat(dataDir).exists();

        try (EmbeddedKafkaBroker second = EmbeddedKafkaBroker.start(config);
             Admin admin = admin(second.bootstrapServers())) {
            Set<String> names = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            assertThat(names).contains("kept");
        }
    }

    @Test
    void brokerDoesNotOutliveAKilledParent() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-cp", System.getProperty("java.class.path"),
                BrokerParentMain.class.getName())
                .redirectErrorStream(true);
        Process parent = pb.start();
        long brokerPid = -1;
        Path brokerDir = null;
        try (BufferedReader out = new BufferedReader(
                new InputStreamReader(parent.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            int lines = 0;
            while ((line = out.readLine()) != null && lines++ < 10_000) {
                if (line.startsWith("BROKER ")) {
                    String[] parts = line.split(" ");
                    brokerPid = Long.parseLong(parts[1]);
                    brokerDir = Path.of(parts[3]);
                    break;
                }
            }
            assertThat(brokerPid).as("the parent reported its broker").isPositive();
            Optional<ProcessHandle> broker = ProcessHandle.of(brokerPid);
            assertThat(broker).isPresent();
            assertThat(broker.get().isAlive()).isTrue();

            parent.destroyForcibly(); // SIGKILL: no shutdown hook runs in the parent
            parent.waitFor(10, TimeUnit.SECONDS);

            await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100))
                    .until(() -> !broker.get().isAlive());
        } finally {
            parent.destroyForcibly();
            ProcessHandle.of(brokerPid).ifPresent(ProcessHandle::destroyForcibly);
            if (brokerDir != null && Files.exists(brokerDir)) {
                try (var files = Files.walk(brokerDir)) {
                    files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
    }

    private static Admin admin(String bootstrap) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(props);
    }
}
