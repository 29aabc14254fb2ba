package io.heartgate.agent.probe;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;

/**
 * Reads sample values out of a Prometheus text exposition. Hand-written because the agent needs only
 * "sum (or max) of the samples of metric X", and the Java Prometheus libraries expose no parser for the
 * text format; a full parser would be the larger dependency by far.
 *
 * <p>Lines are {@code name{labels} value [timestamp]}; comments and blank lines are skipped,
 * unparsable lines are ignored. Immutable once built.
 */
public final class PrometheusText {

    private final List<Sample> samples;

    private PrometheusText(List<Sample> samples) {
        this.samples = samples;
    }

    /** Parses an exposition; never throws, ignoring lines it cannot read. */
    public static PrometheusText parse(String text) {
        List<Sample> samples = new ArrayList<>();
        for (String raw : text.split("\n")) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int brace = line.indexOf('{');
            int space;
            String name;
            if (brace >= 0 && brace < firstSpace(line)) {
                int close = line.lastIndexOf('}');
                if (close < brace) {
                    continue;
                }
                name = line.substring(0, brace);
                space = close + 1;
            } else {
                space = firstSpace(line);
                if (space < 0) {
                    continue;
                }
                name = line.substring(0, space);
            }
            String[] rest = line.substring(space).strip().split("\\s+");
            if (rest.length == 0 || rest[0].isEmpty()) {
                continue;
            }
            try {
                double value = Double.parseDouble(rest[0]);
                if (!Double.isNaN(value)) {
                    samples.add(new Sample(name, value));
                }
            } catch (NumberFormatException e) {
                // A malformed line in a third-party page is not our error; skip it.
            }
        }
        return new PrometheusText(List.copyOf(samples));
    }

    private static int firstSpace(String line) {
        int space = line.indexOf(' ');
        int tab = line.indexOf('\t');
        if (space < 0) {
            return tab;
        }
        return tab < 0 ? space : Math.min(space, tab);
    }

    /** Returns whether any sample of {@code name} is present. */
    public boolean has(String name) {
        return samples.stream().anyMatch(s -> s.name.equals(name));
    }

    /** Returns the sum of every sample of {@code name} (across label sets), or empty when there is none. */
    public OptionalDouble sum(String name) {
        double sum = 0;
        boolean found = false;
        for (Sample s : samples) {
            if (s.name.equals(name)) {
                sum += s.value;
                found = true;
            }
        }
        return found ? OptionalDouble.of(sum) : OptionalDouble.empty();
    }

    /** Returns the largest sample of {@code name}, or empty when there is none. */
    public OptionalDouble max(String name) {
        return samples.stream().filter(s -> s.name.equals(name)).mapToDouble(s -> s.value).max();
    }

    private record Sample(String name, double value) {
    }
}
