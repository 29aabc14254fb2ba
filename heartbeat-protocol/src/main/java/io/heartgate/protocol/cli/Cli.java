package io.heartgate.protocol.cli;

import io.heartgate.protocol.Durations;
import io.heartgate.protocol.InvalidSettingException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import sun.misc.Signal;

/**
 * Holds what the three command lines (scheduler, agent, simulator) share: picocli set up so that
 * durations read as {@code 250ms}, {@code 5s}, {@code 2m} and a bad flag or value ends with one
 * line naming it and exit status 2; and signal handlers. Here because every runnable module
 * already depends on this one; picocli is an optional dependency of it, so library users of the
 * protocol do not inherit it.
 */
public final class Cli {

    private static final Logger log = LoggerFactory.getLogger(Cli.class);

    private Cli() {
    }

    /**
     * Returns a picocli command line for {@code command}, whose bad flags print
     * {@code "<tool>: <what is wrong> (see --help)"} and exit 2.
     */
    public static CommandLine commandLine(String tool, Object command) {
        CommandLine cmd = new CommandLine(command);
        cmd.registerConverter(Duration.class, value -> {
            try {
                return Durations.parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        });
        cmd.setParameterExceptionHandler((ex, args) -> {
            PrintWriter err = ex.getCommandLine().getErr();
            err.println(tool + ": " + ex.getMessage() + " (see --help)");
            return 2;
        });
        return cmd;
    }

    /**
     * Returns {@code "--flag: problem"} for a configuration's complaint: the flag is the one
     * {@code flags} maps the setting to, else the setting's name in kebab case
     * ({@code firstByteTimeout} is {@code --first-byte-timeout}).
     */
    public static String flagError(InvalidSettingException e, Map<String, String> flags) {
        String flag = flags.get(e.setting());
        if (flag == null && e.setting().equals(e.setting().toUpperCase(Locale.ROOT))) {
            flag = e.setting(); // an environment variable's own name (OTEL_TRACES_EXPORTER)
        } else if (flag == null) {
            flag = "--" + e.setting().replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
        }
        return flag + ": " + e.problem();
    }

    /**
     * Runs {@code action} on SIGTERM or SIGINT. A handler of our own, rather than a shutdown hook,
     * lets a program finish its orderly stop and exit 0, where the JVM's default exits 143.
     */
    public static void onTerminate(Runnable action) {
        onSignal("TERM", action);
        onSignal("INT", action);
    }

    /** Runs {@code action} on every signal {@code name} (such as {@code USR2}), where the platform allows it. */
    public static void onSignal(String name, Runnable action) {
        try {
            Signal.handle(new Signal(name), s -> action.run());
        } catch (IllegalArgumentException e) {
            // Some platforms reserve a signal for the JVM; the program works without that handler.
            log.warn("Cannot handle SIG{} on this platform: {}", name, e.getMessage());
        }
    }
}
