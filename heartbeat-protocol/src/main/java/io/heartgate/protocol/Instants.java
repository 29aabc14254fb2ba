package io.heartgate.protocol;

import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;

/**
 * Reads the timestamps heartbeats carry. Agents write {@code sentAt} as {@link Instant#toString()}
 * does, {@code 2026-12-06T14:51:02.123456Z}; that form is read here character by character, at a
 * fraction of what {@link Instant#parse}'s formatter costs, and anything else is left to it, so the
 * answer (an instant, or the formatter's exception) is always the one {@link Instant#parse} gives.
 */
final class Instants {

    private Instants() {
    }

    /**
     * Returns the instant {@code text} names, as {@link Instant#parse} reads it.
     *
     * @throws java.time.format.DateTimeParseException where {@link Instant#parse} throws it
     */
    static Instant parse(String text) {
        Instant fast = plainUtc(text);
        return fast != null ? fast : Instant.parse(text);
    }

    /**
     * Reads {@code YYYY-MM-DDTHH:MM:SS[.F]Z} (F of 1 to 9 digits, hours 0 to 23, seconds 0 to 59),
     * or returns {@code null} for any other text: a leap second, an offset, another year's width, or
     * a date that does not exist all go to the formatter.
     */
    static Instant plainUtc(String t) {
        int n = t.length();
        if (n < 20 || n > 30 || t.charAt(4) != '-' || t.charAt(7) != '-' || t.charAt(10) != 'T'
                || t.charAt(13) != ':' || t.charAt(16) != ':' || t.charAt(n - 1) != 'Z') {
            return null;
        }
        int year = digits(t, 0, 4);
        int month = digits(t, 5, 2);
        int day = digits(t, 8, 2);
        int hour = digits(t, 11, 2);
        int minute = digits(t, 14, 2);
        int second = digits(t, 17, 2);
        if (year < 0 || month < 0 || day < 0 || hour < 0 || hour > 23 || minute < 0 || minute > 59
                || second < 0 || second > 59) {
            return null;
        }
        int nanos = 0;
        if (n > 20) {
            int fraction = n - 21; // digits between '.' and 'Z'
            if (t.charAt(19) != '.' || fraction < 1 || fraction > 9) {
                return null;
            }
            nanos = digits(t, 20, fraction);
            if (nanos < 0) {
                return null;
            }
            for (int i = fraction; i < 9; i++) {
                nanos *= 10;
            }
        }
        long epochDay;
        try {
            epochDay = LocalDate.of(year, month, day).toEpochDay();
        } catch (DateTimeException e) {
            return null; // no such date: the formatter says so in its own words
        }
        return Instant.ofEpochSecond(epochDay * 86_400 + hour * 3_600L + minute * 60L + second, nanos);
    }

    /** Returns the number the {@code count} ASCII digits at {@code from} spell, or -1 if one is not a digit. */
    private static int digits(String t, int from, int count) {
        int v = 0;
        for (int i = from; i < from + count; i++) {
            char c = t.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            v = v * 10 + (c - '0');
        }
        return v;
    }
}
