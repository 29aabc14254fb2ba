package io.heartgate.scheduler;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/** Converts sizes such as {@code 16MiB}, {@code 512KiB} or a number of bytes for picocli. */
final class SizeConverter implements CommandLine.ITypeConverter<Long> {
    @Override
    public Long convert(String value) {
        Matcher m = Pattern.compile("(\\d{1,12})\\s*(|b|k|kb|kib|m|mb|mib|g|gb|gib)")
                .matcher(value.trim().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a size; use e.g. 16MiB, 512KiB or 1048576");
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "k", "kb", "kib" -> n * 1024;
            case "m", "mb", "mib" -> n * 1024 * 1024;
            case "g", "gb", "gib" -> n * 1024 * 1024 * 1024;
            default -> n;
        };
    }
}
