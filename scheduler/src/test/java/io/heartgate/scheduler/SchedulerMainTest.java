package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.routing.WarmFirst;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.testkit.CommandLineRun;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The scheduler's command line, short of starting it: help text and bad flags. */
class SchedulerMainTest {

    @Test
    void helpListsTheProxyFlagsWithTheirEnvironmentVariables() {
        CommandLineRun run = CommandLineRun.run(SchedulerMain.commandLine(), "--help");

        assertThat(run.status()).isZero();
        assertThat(run.out()).contains("--transport", "SCHEDULER_TRANSPORT", "--keepalive-timeout",
                "SCHEDULER_KEEPALIVE_TIMEOUT", "io_uring", "epoll", "nio",
                "--port", "SCHEDULER_PORT", "--api-keys", "SCHEDULER_API_KEYS", "--upstream-api-key", "--strategy", "SCHEDULER_STRATEGY", "--retries", "SCHEDULER_RETRIES",
                "--warm-first", "SCHEDULER_WARM_FIRST", "--warm-max-load", "SCHEDULER_WARM_MAX_LOAD",
                "--reserve-slots", "SCHEDULER_RESERVE_SLOTS");
    }

    @Test
    void warmFirstIsOnByDefaultAndTurnsOffWithFalse() {
        assertThat(configOf().warmFirst()).isEqualTo(new WarmFirst(true, 4));
        assertThat(configOf("--warm-first=false").warmFirst().enabled()).isFalse();
        assertThat(configOf("--warm-first").warmFirst().enabled()).isTrue();
        assertThat(configOf("--warm-max-load", "0").warmFirst().maxLoad()).isZero();
    }

    @Test
    void theReserveIsOffByDefault() {
        assertThat(configOf().proxy().reserveSlots()).isZero();
        assertThat(configOf("--reserve-slots", "3").proxy().reserveSlots()).isEqualTo(3);
        assertThat(configOf().eventsTopic()).isEqualTo("heartgate-gateway-events");
        assertThat(configOf("--events-topic", "team-a.events").eventsTopic()).isEqualTo("team-a.events");
    }

    @Test
    void runsOneEventLoopPerCoreUnlessTold() {
        assertThat(configOf().proxy().eventLoops()).isEqualTo(Math.max(1, Runtime.getRuntime().availableProcessors()));
        assertThat(configOf("--event-loops", "0").proxy().eventLoops()).isEqualTo(configOf().proxy().eventLoops());
        assertThat(configOf("--event-loops", "3").proxy().eventLoops()).isEqualTo(3);
    }

    private static SchedulerConfig configOf(String... args) {
        picocli.CommandLine cmd = SchedulerMain.commandLine();
        cmd.parseArgs(args);
        return ((SchedulerMain) cmd.getCommand()).config();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "--transport kqueue | --transport: must be one of auto, io_uring, epoll, nio, was 'kqueue'",
        "--strategy fastest | --strategy: 'fastest' is not a strategy",
        "--affinity-key cookie:sid | --affinity-key: 'cookie:sid' is not a key source",
        "--affinity-prefix 0 | --affinity-prefix: must be 1 to 1048576, was 0",
        "--affinity-load-factor 0.5 | --affinity-load-factor: must be 1 to 100",
        "--affinity-fallback affinity | --affinity-fallback: must be another strategy than affinity",
        "--affinity-fallback fastest | --affinity-fallback: 'fastest' is not a strategy",
        "--affinity-bound tokens | --affinity-bound: 'tokens' is not a bound; use wait",
        "--affinity-max-wait 11m | --affinity-max-wait: must be 0s to 10m, was 11m",
        "--max-body 512 | --max-body: must be at least 1KiB",
        "--first-byte-timeout 0s | --first-byte-timeout: must be positive",
        "--log-format yaml | --log-format: must be text or json",
        "--retries 11 | --retries: must be 0 to 10",
        "--migrate-streams 11 | --migrate-streams: must be 0 to 10",
        "--migrate-streams -1 | --migrate-streams: must be 0 to 10",
        "--port 70000 | --port: must be 0 to 65535",
        "--events-topic a/b | --events-topic: must be 1 to 249 of A-Za-z0-9._-, was 'a/b'",
        "--events-topic gpu-heartbeats | --events-topic: must differ from the heartbeat topic gpu-heartbeats",
        "--keepalive-timeout 0s | --keepalive-timeout: must be positive",
        "--allow-upstream 10.0.0.0/33 | --allow-upstream: '10.0.0.0/33' needs a prefix of 0 to 32",
        "--allow-upstream http://x | --allow-upstream: 'http://x' is not a CIDR",
        "--allow-upstream a+b | --allow-upstream: 'a+b' is neither a CIDR",
        "--admin-token-all | --admin-token-all: needs --admin-token",
        "--tls-cert /etc/hostname | --tls-key: --tls-cert and --tls-key go together",
        "--flap-window 0s | --flap-window: must be 1s to 24h",
        "--flap-limit -1 | --flap-limit: must be 0 (off) to 1000",
        "--slow-start 25h | --slow-start: must be 0 (off) to 24h",
        "--warm-max-load -1 | --warm-max-load: must be 0 to 1000000, was -1",
        "--reserve-slots -1 | --reserve-slots: must be 0 to 100000, was -1",
        "--event-loops -1 | --event-loops: must be 0 (one per core) to 1024, was -1",
        "--event-loops 1025 | --event-loops: must be 0 (one per core) to 1024, was 1025",
        "--warm-first=maybe | --warm-first",
        "--heartbeat-keys /nonexistent/keys | --heartbeat-keys: ",
        "--kafka-config /nonexistent/kafka.properties | --kafka-config: cannot read",
    })
    void rejectsBadFlagsWithOneLineAndStatus2(String args, String message) {
        CommandLineRun run = CommandLineRun.run(SchedulerMain.commandLine(), args.trim().split(" +"));

        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err()).startsWith("scheduler: ").contains(message).doesNotContain("\n");
    }

    @Test
    void keysAddPrintsANewKeyAndTheLineThatAdmitsIt() {
        CommandLineRun run = CommandLineRun.run(SchedulerMain.commandLine(), "keys", "add", "team-a", "--models",
                "llama3:8b");

        assertThat(run.status()).isZero();
        String[] lines = run.out().split("\n");
        assertThat(lines).hasSize(2);
        assertThat(lines[0]).matches("hg-[A-Za-z0-9_-]{43}");
        assertThat(lines[1]).isEqualTo("team-a " + ApiKeys.hash(lines[0]) + " models=llama3:8b");
        assertThat(ApiKeys.parse(lines[1]).find(lines[0]).name()).isEqualTo("team-a");
        assertThat(CommandLineRun.run(SchedulerMain.commandLine(), "keys", "add", "team-a").out())
                .as("a new key each time").doesNotContain(lines[0]);
    }

    @Test
    void aBadKeysFileIsOneLineNamingTheFlagAndTheLine(@TempDir Path dir) throws Exception {
        Path keys = Files.writeString(dir.resolve("keys"), "team " + ApiKeys.hash("k") + " burst=5\n");
        CommandLineRun run = CommandLineRun.run(SchedulerMain.commandLine(), "--api-keys", keys.toString());

        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err()).startsWith("scheduler: --api-keys: line 1: key 'team': unknown attribute 'burst=5'")
                .doesNotContain("\n");
        CommandLineRun missing = CommandLineRun.run(SchedulerMain.commandLine(), "--upstream-api-key",
                dir.resolve("absent").toString());
        assertThat(missing.err()).startsWith("scheduler: --upstream-api-key: cannot read");
    }
}
