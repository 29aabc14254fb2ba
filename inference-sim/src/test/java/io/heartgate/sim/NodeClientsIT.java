package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Drives the simulator with the official {@code openai} and {@code ollama} npm client libraries,
 * installed into a temp dir, to prove the wire formats are close enough for real clients. Skips
 * only when {@code node} is absent; {@code .ci/run} installs Node.js so it always runs in CI.
 */
class NodeClientsIT {

    private static final String OPENAI_VERSION = "7.55.0";
    private static final String OLLAMA_VERSION = "0.6.4";

    @Test
    void officialClientsStreamAChatFromTheSim(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(onPath("node") && onPath("npm"),
                "node and npm are not on the PATH: skipping the official-client test (CI installs them)");
        Files.writeString(dir.resolve("package.json"), "{\"private\": true, \"type\": \"module\"}",
                StandardCharsets.UTF_8);
        try (InputStream script = getClass().getResourceAsStream("/node/clients.mjs")) {
            Files.copy(script, dir.resolve("clients.mjs"));
        }
        Run install = run(dir, 300, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                "openai@" + OPENAI_VERSION, "ollama@" + OLLAMA_VERSION);
        assertThat(install.status).as("npm install failed:%n%s", install.output).isZero();

        try (SimHarness sim = new SimHarness(SimConfig.forTests("node-js", List.of("llama3:8b", "qwen2.5:7b")))) {
            Run clients = run(dir, 60, "node", "clients.mjs", "http://127.0.0.1:" + sim.server.port(), "llama3:8b");

            assertThat(clients.status).as(clients.output).isZero();
            String expected = new TextSource("node-js").text(8);
            assertThat(clients.output).contains("OPENAI \"" + expected + "\"");
            assertThat(clients.output).contains("OLLAMA \"" + expected + "\"");
            assertThat(clients.output).contains("TAGS [\"llama3:8b\",\"qwen2.5:7b\"]");
        }
    }

    private static boolean onPath(String command) {
        try {
            Process p = new ProcessBuilder(command, "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static Run run(Path dir, int timeoutSeconds, String... command) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(command));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        // Read in the background so a chatty process never blocks on a full pipe.
        StringBuilder out = new StringBuilder();
        Thread reader = new Thread(() -> {
            try {
                out.append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                out.append("(output unreadable: ").append(e).append(')');
            }
        });
        reader.start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            reader.join(5_000);
            return new Run(-1, "timed out after " + timeoutSeconds + " s: " + String.join(" ", cmd) + "\n" + out);
        }
        reader.join(5_000);
        return new Run(p.exitValue(), out.toString());
    }

    private record Run(int status, String output) {
    }
}
