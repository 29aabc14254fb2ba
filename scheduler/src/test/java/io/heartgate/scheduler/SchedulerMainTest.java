package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** The scheduler's command line, short of starting it: help text and bad flags. */
class SchedulerMainTest {

    @Test
    void helpListsTheTransportFlagWithItsEnvironmentVariable() {
        StringWriter out = new StringWriter();
        CommandLine cmd = SchedulerMain.commandLine();
        cmd.setOut(new PrintWriter(out));

        assertThat(cmd.execute("--help")).isZero();
        assertThat(out.toString()).contains("--transport", "SCHEDULER_TRANSPORT", "io_uring", "epoll", "nio",
                "--port", "SCHEDULER_PORT", "--strategy", "SCHEDULER_STRATEGY", "--retries", "SCHEDULER_RETRIES");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "--transport kqueue | --transport must be one of auto, io_uring, epoll, nio, was 'kqueue'",
        "--strategy fastest | --strategy",
        "--retries 11 | --retries must be 0 to 10",
        "--port 70000 | --port must be 0 to 65535",
    })
    void rejectsBadFlagsWithOneLineAndStatus2(String args, String message) {
        StringWriter err = new StringWriter();
        CommandLine cmd = SchedulerMain.commandLine();
        cmd.setErr(new PrintWriter(err));
        PrintStream realErr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        int status;
        try {
            status = cmd.execute(args.trim().split(" +"));
        } finally {
            System.setErr(realErr);
        }
        String all = (err + captured.toString(StandardCharsets.UTF_8)).strip();

        assertThat(status).isEqualTo(2);
        assertThat(all).startsWith("scheduler: ").contains(message).doesNotContain("\n");
    }
}
