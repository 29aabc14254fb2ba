package io.heartgate.protocol;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses and prints the durations every Heartgate command line accepts: a whole number followed by
 * {@code us}, {@code ms}, {@code s}, {@code m} or {@code h}, such as {@code 250ms}, {@code 5s} or
 * {@code 2m} ({@code us}, microseconds, for the simulator's costs per token). A bare number is
 * rejected, because "5" could mean seconds or milliseconds.
 */
public final class Durations {

    private static final Pattern FORMAT = Pattern.compile("(\\d{1,9})\\s*(us|ms|s|m|h)");

    private Durations() {
    }

    /**
     * Parses a duration.
     *
     * @throws IllegalArgumentException naming the accepted format when {@code text} does not match it
     */
    public static Duration parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("missing duration; use e.g. 250ms, 5s or 2m");
        }
        Matcher m = FORMAT.matcher(text.trim().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("'" + text + "' is not a duration; use e.g. 250ms, 5s or 2m");
        }
        long amount = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "us" -> Duration.ofNanos(amount * 1000);
            case "ms" -> Duration.ofMillis(amount);
            case "s" -> Duration.ofSeconds(amount);
            case "m" -> Duration.ofMinutes(amount);
            case "h" -> Duration.ofHours(amount);
            default -> throw new IllegalStateException("unreachable: " + m.group(2));
        };
    }

    /** Formats a duration in the largest unit that keeps it whole, such as {@code 1500ms}, {@code 2m} or {@code 400us}. */
    public static String format(Duration d) {
        if (d.toNanos() % 1_000_000 != 0) {
            return d.toNanos() / 1000 + "us";
        }
        long ms = d.toMillis();
        if (ms != 0 && ms % 3_600_000 == 0) {
            return ms / 3_600_000 + "h";
        }
        if (ms != 0 && ms % 60_000 == 0) {
            return ms / 60_000 + "m";
        }
        if (ms != 0 && ms % 1000 == 0) {
            return ms / 1000 + "s";
        }
        return ms + "ms";
    }
}
