package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Runs the real scheduler jar as a child JVM and stops it with SIGTERM in the middle of a stream. */
@ExtendWith(KafkaExtension.class)
class SchedulerProcessIT {

    @Test
    void sigtermDrainsInFlightStreamsThenExitsZero(TestKafka kafka, @TempDir Path dir) throws Exception {
        Path jar = Path.of("target", "scheduler.jar");
        assertThat(jar).as("the packaged scheduler (run through mvn verify)").exists();
        try (Cluster cluster = new Cluster(kafka.bootstrapServers())) {
            Cluster.SimNode sim = cluster.sim("gpu-slow", c -> c.timing(20, Duration.ofMillis(100), Duration.ofMillis(1)));
            cluster.heartbeat("gpu-slow", sim.url(), b -> b);
            Path log = dir.resolve("scheduler.log");
            Process scheduler = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx256m", "-jar", jar.toString(), "--kafka", kafka.bootstrapServers(), "--topic", cluster.topic,
                    "--bind", "127.0.0.1", "--port", "0", "--admin-port", "0", "--drain-timeout", "10s")
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                int proxyPort = awaitPort(log, "proxy");
                int adminPort = awaitPort(log, "admin");
                HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
                URI ready = URI.create("http://127.0.0.1:" + adminPort + "/readyz");
                await().atMost(Duration.ofSeconds(20)).until(() ->
                        http.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.discarding())
                                .statusCode() == 200);

                HttpResponse<InputStream> stream = http.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + proxyPort + "/api/generate"))
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"llama3:8b\",\"prompt\":\"p\"}")).build(),
                        HttpResponse.BodyHandlers.ofInputStream());
                BufferedReader reader = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8));
                List<String> lines = new ArrayList<>();
                lines.add(reader.readLine()); // the first token is on its way: now stop the scheduler

                scheduler.destroy(); // SIGTERM
                await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20)).until(() ->
                        http.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.discarding())
                                .statusCode() == 503);
                String line;
                while ((line = reader.readLine()) != null && lines.size() < 1000) {
                    lines.add(line);
                }

                assertThat(lines).hasSize(21); // 20 tokens and the final object: the stream was not cut
                assertThat(lines.get(20)).contains("\"done\":true");
                assertThat(scheduler.waitFor(20, TimeUnit.SECONDS)).as(Files.readString(log)).isTrue();
                assertThat(scheduler.exitValue()).as(Files.readString(log)).isZero();
                assertThat(Files.readString(log)).contains("Scheduler draining").contains("Scheduler stopped");
            } finally {
                scheduler.destroyForcibly();
            }
        }
    }

    private static int awaitPort(Path log, String which) {
        Pattern p = Pattern.compile(which + " listening on [^:]+:(\\d+)");
        int[] port = {-1};
        await().atMost(Duration.ofSeconds(60)).until(() -> {
            if (!Files.exists(log)) {
                return false;
            }
            Matcher m = p.matcher(Files.readString(log));
            if (m.find()) {
                port[0] = Integer.parseInt(m.group(1));
                return true;
            }
            return false;
        });
        return port[0];
    }
}
