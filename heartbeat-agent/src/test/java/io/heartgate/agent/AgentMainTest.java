package io.heartgate.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.testkit.CommandLineRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

class AgentMainTest {

    @Test
    void printsEveryFlagWithItsEnvironmentVariable() {
        CommandLineRun run = CommandLineRun.run(AgentMain.commandLine(), "--help");

        assertThat(run.status()).isZero();
        assertThat(run.out()).contains(
                "--kafka", "KAFKA_BOOTSTRAP_SERVERS", "--topic", "HEARTBEAT_TOPIC", "--node-id", "NODE_ID",
                "--url", "NODE_URL", "--probe-url", "NODE_PROBE_URL", "--backend", "NODE_BACKEND",
                "--weight", "NODE_WEIGHT", "--capacity", "NODE_CAPACITY", "--prefill-tps", "NODE_PREFILL_TPS",
                "--models", "NODE_MODELS", "--interval", "HEARTBEAT_INTERVAL",
                "--drain", "--once");
    }

    @Test
    void takesTheOperatorsPrefillSpeed() {
        CommandLine cl = AgentMain.commandLine();
        cl.parseArgs("--kafka", "k:9092", "--url", "http://h:1", "--prefill-tps", "1850.5");
        assertThat(((AgentMain) cl.getCommand()).config().prefillTps()).isEqualTo(1850.5);

        CommandLine unset = AgentMain.commandLine();
        unset.parseArgs("--kafka", "k:9092", "--url", "http://h:1");
        assertThat(((AgentMain) unset.getCommand()).config().prefillTps()).as("measured, where it can be").isNull();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "--kafka k:9092 --url http://h:1 --interval 50ms | --interval: must be 100ms to 60s",
        "--kafka k:9092 --url http://h:1 --interval 2 | '2' is not a duration",
        "--kafka k:9092 --url http://h:1 --weight 0 | --weight: must be 1 to 1000",
        "--kafka k:9092 --url http://h:1 --capacity -1 | --capacity: must be 1 to 100000, was -1",
        "--kafka k:9092 --url http://h:1 --weight many | --weight",
        "--kafka k:9092 --url http://h:1 --prefill-tps 0 | --prefill-tps: must be above 0 and at most 10000000",
        "--kafka k:9092 --url http://h:1 --prefill-tps NaN | --prefill-tps: must be above 0",
        "--kafka k:9092 --url http://h:1 --prefill-tps fast | --prefill-tps",
        "--kafka k:9092 --url http://h:1 --backend triton | 'triton' is not a backend",
        "--kafka k:9092 --url /relative | --url: must be absolute",
        "--kafka k:9092 --url http://h:1 --node-id bad/id | --node-id: must be 1 to 128",
        "--url http://h:1 | --kafka: is required (or set KAFKA_BOOTSTRAP_SERVERS)",
        "--kafka k:9092 | --url: is required",
        "--kafka k:9092 --url http://h:1 --frobnicate | --frobnicate",
    })
    void rejectsBadFlagsWithOneLineAndStatus2(String args, String message) {
        CommandLineRun run = CommandLineRun.run(AgentMain.commandLine(), args.trim().split(" +"));

        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err()).startsWith("heartbeat-agent: ").contains(message).doesNotContain("\n");
    }
}
