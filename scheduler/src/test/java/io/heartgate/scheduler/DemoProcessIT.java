package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.json.JsonObject;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs {@code scheduler.jar --demo 3} as a user would, with its embedded broker, on free ports. */
class DemoProcessIT {

    @Test
    void theDemoStreamsFromThreeNodesAndStopsCleanly(@TempDir Path dir) throws Exception {
        Path jar = Path.of("target", "scheduler.jar");
        assertThat(jar).as("the packaged scheduler (run through mvn verify)").exists();
        Path out = dir.resolve("out.log");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "-jar", jar.toString(), "--demo", "3", "--bind", "127.0.0.1", "--port", "0",
                "--admin-port", "0", "--embedded-kafka-port", "0", "--data-dir", dir.resolve("kafka").toString())
                .redirectErrorStream(true).redirectOutput(out.toFile()).start();
        try {
            int proxyPort = ProcessLogs.port(out, "proxy listening on [^:]+:(\\d+)");
            ProcessLogs.port(out, "kafka bootstrap [^:]+:(\\d+)");
            await().atMost(Duration.ofSeconds(60)).until(() -> Files.readString(out).contains("Press Ctrl-C"));
            String printed = Files.readString(out);
            assertThat(printed).contains("curl -N http://127.0.0.1:" + proxyPort + "/api/generate")
                    .contains("curl -N http://127.0.0.1:" + proxyPort + "/v1/chat/completions")
                    .contains("Dashboard: http://127.0.0.1:");

            HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            Set<String> answered = new HashSet<>();
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + proxyPort + "/api/generate"))
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"llama3:8b\",\"prompt\":\"hi\"}"))
                        .build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    List<String> lines = r.body().lines().toList();
                    assertThat(new JsonObject(lines.get(lines.size() - 1)).getBoolean("done")).isTrue();
                    answered.add(r.headers().firstValue("x-upstream-node").orElseThrow());
                }
                return answered.size() == 3;
            });
            assertThat(answered).containsExactlyInAnyOrder("demo-gpu-1", "demo-gpu-2", "demo-gpu-3");

            List<ProcessHandle> children = p.descendants().toList();
            assertThat(children).as("the embedded broker runs as a child JVM").isNotEmpty();
            long signalled = System.nanoTime();
            p.destroy(); // SIGTERM
            assertThat(p.waitFor(10, TimeUnit.SECONDS)).as(Files.readString(out)).isTrue();
            System.out.printf("[heartgate-test] demo stopped %d ms after SIGTERM%n", (System.nanoTime() - signalled) / 1_000_000);
            assertThat(p.exitValue()).as(Files.readString(out)).isZero();
            await().atMost(Duration.ofSeconds(5)).until(() -> children.stream().noneMatch(ProcessHandle::isAlive));
            assertThat(Files.readString(out)).contains("tombstone published").contains("Scheduler stopped");
        } finally {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
    }

    @Test
    void aBusyPortGivesOneClearLineAndStatus2(@TempDir Path dir) throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-jar", Path.of("target", "scheduler.jar").toString(), "--bind", "127.0.0.1",
                    "--port", String.valueOf(taken.getLocalPort()), "--admin-port", "0", "--embedded-kafka-port", "0")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("out.log").toFile()).start();
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            String output = Files.readString(dir.resolve("out.log")).strip();

            assertThat(p.exitValue()).isEqualTo(2);
            assertThat(output).startsWith("scheduler: --port " + taken.getLocalPort()).contains("already in use")
                    .doesNotContain("\n").doesNotContain("Exception");
        }
    }
}
