package io.heartgate.sim;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs the official {@code openai}, {@code ollama} and {@code @anthropic-ai/sdk} npm clients (installed into a temp dir, never
 * committed) against a base URL: a sim, or the scheduler's proxy in front of sims. Shared through
 * this module's test-jar. Skips the calling test only when {@code node} is absent; {@code .ci/run}
 * installs Node.js so it always runs in CI.
 */
public final class NodeClients {

    static final String OPENAI_VERSION = "7.55.0";
    static final String OLLAMA_VERSION = "0.6.4";
    static final String ANTHROPIC_VERSION = "1.17.0";

    /** The result of one command: exit status and everything it printed. */
    public record Run(int status, String output) {
    }

    private NodeClients() {
    }

    /** Installs the clients into {@code dir}; skips the test when node or npm is missing. */
    public static void install(Path dir) throws Exception {
        Assumptions.assumeTrue(onPath("node") && onPath("npm"),
                "node and npm are not on the PATH: skipping the official-client test (CI installs them)");
        Files.writeString(dir.resolve("package.json"), "{\"private\": true, \"type\": \"module\"}",
                StandardCharsets.UTF_8);
        for (String name : List.of("clients.mjs", "catalogue.mjs", "migrated.mjs", "responses.mjs", "messages.mjs")) {
            try (InputStream script = NodeClients.class.getResourceAsStream("/node/" + name)) {
                Files.copy(script, dir.resolve(name));
            }
        }
        Run install = run(dir, 300, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                "openai@" + OPENAI_VERSION, "ollama@" + OLLAMA_VERSION, "@anthropic-ai/sdk@" + ANTHROPIC_VERSION);
        if (install.status() != 0) {
            throw new AssertionError("npm install failed:\n" + install.output());
        }
    }

    /** Streams one chat through each client from {@code baseUrl}; prints OPENAI, OLLAMA and TAGS lines. */
    public static Run chat(Path dir, String baseUrl, String model) throws Exception {
        return run(dir, 60, "node", "clients.mjs", baseUrl, model);
    }

    /** As {@link #chat(Path, String, String)}, each client sending {@code apiKey} as its users would. */
    public static Run chat(Path dir, String baseUrl, String model, String apiKey) throws Exception {
        return run(dir, 60, "node", "clients.mjs", baseUrl, model, apiKey);
    }

    /**
     * Lists the models from {@code baseUrl} through each client, three times: prints a MODELS, TAGS and
     * PS line per time, then RETRIEVE for {@code model}.
     */
    public static Run catalogue(Path dir, String baseUrl, String model) throws Exception {
        return run(dir, 60, "node", "catalogue.mjs", baseUrl, model);
    }

    /**
     * Streams one chat through the openai client, and one raw generate and one chat through the
     * ollama client, from {@code baseUrl}; prints an OPENAI line (text and the chunk ids seen), an
     * OLLAMA and an OLLAMA_CHAT line (text and whether the last object said done).
     */
    public static Run migrated(Path dir, String baseUrl, String model) throws Exception {
        return run(dir, 60, "node", "migrated.mjs", baseUrl, model);
    }

    /**
     * Streams one answer through the openai client's Responses API from {@code baseUrl}, continues it with
     * {@code previous_response_id}, retrieves it, and continues an id never made; prints a STREAM,
     * CONTINUED, RETRIEVED and MISSING line.
     */
    public static Run responses(Path dir, String baseUrl, String model) throws Exception {
        return run(dir, 60, "node", "responses.mjs", baseUrl, model);
    }

    /**
     * Streams two turns of one conversation through the official Anthropic client from {@code baseUrl},
     * sending Claude Code's session header {@code session}; prints a MESSAGE line per turn (text, usage).
     */
    public static Run messages(Path dir, String baseUrl, String model, String session) throws Exception {
        return run(dir, 60, "node", "messages.mjs", baseUrl, model, session);
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

    static Run run(Path dir, int timeoutSeconds, String... command) throws Exception {
        Process p = new ProcessBuilder(List.of(command)).directory(dir.toFile()).redirectErrorStream(true).start();
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
            return new Run(-1, "timed out after " + timeoutSeconds + " s: " + String.join(" ", command) + "\n" + out);
        }
        reader.join(5_000);
        return new Run(p.exitValue(), out.toString());
    }
}
