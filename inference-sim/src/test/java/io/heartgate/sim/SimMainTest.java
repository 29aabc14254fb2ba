package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class SimMainTest {

    @Test
    void printsHelpWithEveryFlag() {
        StringWriter out = new StringWriter();
        CommandLine cmd = SimMain.commandLine();
        cmd.setOut(new PrintWriter(out));

        assertThat(cmd.execute("--help")).isZero();
        assertThat(out.toString()).contains("--port", "--name", "--models", "--token-delay", "--first-token-delay",
                "--max-concurrency", "--max-loaded-models", "--load-time", "--fail-health", "--error-status", "--hang", "--drop-after",
                "--ollama-prefill");
    }

    @Test
    void ollamaPrefillIsOnUnlessSetToFalse() {
        assertThat(prefill()).isTrue();
        assertThat(prefill("--ollama-prefill")).isTrue();
        assertThat(prefill("--ollama-prefill=true")).isTrue();
        assertThat(prefill("--ollama-prefill=false")).isFalse();
        assertThat(prefill("--ollama-prefill", "false")).isFalse();
    }

    private static boolean prefill(String... flags) {
        CommandLine cmd = SimMain.commandLine();
        String[] args = new String[flags.length + 2];
        args[0] = "--name";
        args[1] = "x";
        System.arraycopy(flags, 0, args, 2, flags.length);
        cmd.parseArgs(args);
        return ((SimMain) cmd.getCommand()).ollamaPrefill;
    }

    @Test
    void rejectsABadDurationWithOneLineAndStatus2() {
        StringWriter err = new StringWriter();
        CommandLine cmd = SimMain.commandLine();
        cmd.setErr(new PrintWriter(err));

        assertThat(cmd.execute("--name", "x", "--token-delay", "fast")).isEqualTo(2);
        assertThat(err.toString().strip()).doesNotContain("\n").contains("--token-delay").contains("250ms, 5s or 2m");
    }

    @Test
    void rejectsAMissingNameAndUnknownFlags() {
        StringWriter err = new StringWriter();
        CommandLine cmd = SimMain.commandLine();
        cmd.setErr(new PrintWriter(err));

        assertThat(cmd.execute("--port", "0")).isEqualTo(2);
        assertThat(cmd.execute("--name", "x", "--bogus")).isEqualTo(2);
        assertThat(err.toString()).contains("--name").contains("--bogus");
    }

    @Test
    void rejectsABadModelLimitNamingTheFlag() {
        StringWriter err = new StringWriter();
        CommandLine cmd = SimMain.commandLine();
        cmd.setErr(new PrintWriter(err));

        assertThat(cmd.execute("--name", "x", "--port", "0", "--max-loaded-models", "-1")).isEqualTo(2);
        assertThat(err.toString()).contains("--max-loaded-models: must be 0 (no limit) to 1000, was -1");
    }
}
