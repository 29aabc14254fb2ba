package io.heartgate.testkit;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import picocli.CommandLine;

/**
 * One run of a tool's command line in a test: its exit status and everything it printed, picocli's
 * own output and the tool's {@code System.err} lines alike (a tool reports a bad flag value on
 * {@code System.err} after picocli has parsed it). Shared so that every tool's flag tests check the
 * contract's "one line and status 2" the same way.
 *
 * @param status the exit status {@code execute} returned
 * @param out what went to standard output
 * @param err what went to standard error, stripped
 */
public record CommandLineRun(int status, String out, String err) {

    /** Runs {@code cmd} with {@code args}, capturing its output; not thread-safe (swaps System.err). */
    public static CommandLineRun run(CommandLine cmd, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        PrintStream realErr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        int status;
        try {
            status = cmd.execute(args);
        } finally {
            System.setErr(realErr);
        }
        return new CommandLineRun(status, out.toString(), (err + captured.toString(StandardCharsets.UTF_8)).strip());
    }
}
