package io.heartgate.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class AgentMainTest {

    @Test
    void printsEveryFlagWithItsEnvironmentVariable() {
        StringWriter out = new StringWriter();
        CommandLine cmd = AgentMain.commandLine();
        cmd.setOut(new PrintWriter(out));

        assertThat(cmd.execute("--help")).isZero();
        assertThat(out.toString()).contains(
                "--kafka", "KAFKA_BOOTSTRAP_SERVERS", "--topic", "HEARTBEAT_TOPIC", "--node-id", "NODE_ID",
                "--url", "NODE_URL", "--probe-url", "NODE_PROBE_URL", "--backend", "NODE_BACKEND",
                "--weight", "NODE_WEIGHT", "--models", "NODE_MODELS", "--interval", "HEARTBEAT_INTERVAL",
                "--drain", "--once");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "--kafka k:9092 --url http://h:1 --interval 50ms | --interval must be 100ms to 60s",
        "--kafka k:9092 --url http://h:1 --interval 2 | '2' is not a duration",
        "--kafka k:9092 --url http://h:1 --weight 0 | --weight must be 1 to 1000",
        "--kafka k:9092 --url http://h:1 --weight many | --weight",
        "--kafka k:9092 --url http://h:1 --backend triton | 'triton' is not a backend",
        "--kafka k:9092 --url /relative | --url must be absolute",
        "--kafka k:9092 --url http://h:1 --node-id bad/id | --node-id must be 1 to 128",
        "--url http://h:1 | --kafka is required",
        "--kafka k:9092 | --url is required",
        "--kafka k:9092 --url http://h:1 --frobnicate | --frobnicate",
    })
    void rejectsBadFlagsWithOneLineAndStatus2(String args, String message) {
        StringWriter err = new StringWriter();
        CommandLine cmd = AgentMain.commandLine();
        cmd.setErr(new PrintWriter(err));
        java.io.PrintStream realErr = System.err;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(captured, true, java.nio.charset.StandardCharsets.UTF_8));
        int status;
        try {
            status = cmd.execute(args.trim().split(" +"));
        } finally {
            System.setErr(realErr);
        }
        String all = (err + captured.toString(java.nio.charset.StandardCharsets.UTF_8)).strip();

        assertThat(status).isEqualTo(2);
        assertThat(all).startsWith("heartbeat-agent: ").contains(message).doesNotContain("\n");
    }
}
