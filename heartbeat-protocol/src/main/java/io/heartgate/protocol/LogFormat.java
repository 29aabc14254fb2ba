package io.heartgate.protocol;

import java.util.Locale;

/**
 * Chooses the log format of a runnable jar before anything logs: {@code text} (the default) or
 * {@code json} (one JSON object per line, from the jar's {@code logback-json.xml}). Logback reads
 * its configuration on the first logger lookup, so the choice has to be made from the raw
 * arguments and environment at the very start of {@code main}. No logging dependency here: it
 * only sets the system property Logback reads.
 */
public final class LogFormat {

    private LogFormat() {
    }

    /** Selects the format named by {@code --log-format} in {@code args}, else by the environment variable. */
    public static void select(String[] args, String envVar) {
        String format = System.getenv(envVar);
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--log-format") && i + 1 < args.length) {
                format = args[i + 1];
            } else if (args[i].startsWith("--log-format=")) {
                format = args[i].substring("--log-format=".length());
            }
        }
        if (format != null && format.trim().toLowerCase(Locale.ROOT).equals("json")
                && System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "logback-json.xml");
        }
    }

    /**
     * Checks a format name.
     *
     * @throws InvalidSettingException for {@code logFormat}, unless it is {@code text} or {@code json}
     */
    public static void check(String format) {
        String f = format == null ? "" : format.trim().toLowerCase(Locale.ROOT);
        if (!f.equals("text") && !f.equals("json")) {
            throw new InvalidSettingException("logFormat", "must be text or json, was '" + format + "'");
        }
    }
}
