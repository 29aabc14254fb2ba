package io.heartgate.loadgen;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

class LoadGenMainTest {

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int execute(String... args) {
        CommandLine cmd = LoadGenMain.commandLine();
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        return cmd.execute(args);
    }

    @Test
    void printsHelpWithEveryFlag() {
        assertThat(execute("--help")).isZero();
        assertThat(out.toString()).contains("--url", "--api", "--rate", "--duration", "--arrivals", "--seed", "--timeout",
                "--max-in-flight", "--mix", "--turns", "--think-time", "--keys", "--keys-file", "--max-tokens",
                "--min-tokens", "--prompt-words", "--prompt-tokens", "--system-prompts", "--system-words",
                "--system-tokens", "--system-seed", "--session-header", "--session-share", "--label", "--out", "--header");
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', value = {
            "--mix|llama3:8b=70,mistral:7b=x",
            "--mix|a=0",
            "--rate|0",
            "--rate|-2",
            "--rate|fast",
            "--duration|fast",
            "--duration|0ms",
            "--timeout|0s",
            "--think-time|soon",
            "--arrivals|bursty",
            "--api|grpc",
            "--turns|0",
            "--max-in-flight|0",
            "--max-tokens|0",
            "--min-tokens|0",
            "--min-tokens|33",
            "--prompt-words|0",
            "--prompt-tokens|-1",
            "--prompt-tokens|250001",
            "--system-tokens|-1",
            "--system-tokens|250001",
            "--system-seed|x",
            "--url|ftp://host/",
            "--url|not a url",
            "--keys-file|/nonexistent/keys.txt",
    })
    void refusesABadValueWithOneLineNamingTheFlagAndStatus2(String flag, String value) {
        String[] base = {"--url", "http://127.0.0.1:9", "--rate", "5", "--duration", "1s"};
        String[] args = new String[base.length + 2];
        System.arraycopy(base, 0, args, 0, base.length);
        args[base.length] = flag;
        args[base.length + 1] = value;

        assertThat(execute(args)).isEqualTo(2);
        assertThat(err.toString().strip()).startsWith("loadgen: ").doesNotContain("\n").contains(flag);
        assertThat(out.toString()).isEmpty();
    }

    @Test
    void refusesMissingRequiredFlags() {
        assertThat(execute("--rate", "5", "--duration", "1s")).isEqualTo(2);
        assertThat(err.toString()).contains("--url");
    }

    @Test
    void refusesAPlanTooLargeToKeep() {
        assertThat(execute("--url", "http://127.0.0.1:9", "--rate", "100000", "--duration", "1h")).isEqualTo(2);
        assertThat(err.toString()).contains("--rate", "at most 2000000");
    }
}
