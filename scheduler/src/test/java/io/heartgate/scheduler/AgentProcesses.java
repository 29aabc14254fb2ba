package io.heartgate.scheduler;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs real heartbeat agents (the packaged jar, one process per node) beside a test's simulated Ollama
 * nodes, each publishing every 500 ms to the test's broker and topic; logs go to {@code dir}. Closing
 * kills them all.
 */
final class AgentProcesses implements AutoCloseable {

    static final Path AGENT_JAR = Path.of("..", "heartbeat-agent", "target", "heartbeat-agent.jar");

    private final String bootstrap;
    private final String topic;
    private final Path dir;
    private final Map<String, Process> agents = new HashMap<>();

    AgentProcesses(String bootstrap, String topic, Path dir) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.dir = dir;
    }

    /** Says whether the packaged agent is there ({@code mvn verify} builds it before the scheduler). */
    static boolean packaged() {
        return Files.exists(AGENT_JAR);
    }

    /** Starts the agent of node {@code id} for the Ollama server at {@code url}. */
    void start(String id, String url) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Xmx96m", "-XX:+UseSerialGC", "-jar", AGENT_JAR.toString(), "--kafka", bootstrap,
                "--topic", topic, "--node-id", id, "--url", url, "--backend", "ollama", "--interval", "500ms",
                "--nvidia-smi", "/nonexistent/nvidia-smi"));
        agents.put(id, new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve(id + ".log").toFile()).start());
    }

    /** Sends SIGTERM to the agent of {@code id}: it publishes its tombstone and exits. */
    void terminate(String id) throws Exception {
        new ProcessBuilder("kill", "-TERM", String.valueOf(agents.get(id).pid())).start().waitFor(5, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws Exception {
        for (Process p : agents.values()) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
