package io.heartgate.agent.gpu;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.HeartbeatRules;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Reads GPU figures from {@code nvidia-smi --query-gpu=... --format=csv,noheader,nounits}, and parses
 * that output (and, for recorded samples, the {@code --format=csv} form with header and units).
 * Values nvidia-smi cannot give ({@code [N/A]}, {@code [Not Supported]}, MIG instances' utilization)
 * become {@code null}. Thread-safe.
 */
public final class NvidiaSmi {

    /** The columns the agent asks for, in this order. */
    public static final String QUERY = "index,uuid,name,utilization.gpu,memory.used,memory.total";

    private final String executable;
    private final Duration timeout;

    /** Creates a reader that runs {@code executable} (usually {@code nvidia-smi}) with a timeout. */
    public NvidiaSmi(String executable, Duration timeout) {
        this.executable = executable;
        this.timeout = timeout;
    }

    /**
     * Runs nvidia-smi once.
     *
     * @throws IOException when it cannot be started (not installed), exits non-zero (no driver), times
     *     out, or prints something that is not the expected CSV; the message says which
     */
    public List<Gpu> read() throws IOException {
        Process p = new ProcessBuilder(executable, "--query-gpu=" + QUERY, "--format=csv,noheader,nounits")
                .redirectErrorStream(true)
                .start();
        try {
            p.getOutputStream().close();
            String out;
            try (InputStream in = p.getInputStream()) {
                // nvidia-smi prints a few hundred bytes per GPU; a bound keeps a wedged one harmless.
                out = new String(in.readNBytes(256 * 1024), StandardCharsets.UTF_8);
            }
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IOException("nvidia-smi did not finish within " + timeout.toMillis() + " ms");
            }
            if (p.exitValue() != 0) {
                throw new IOException("nvidia-smi exited with status " + p.exitValue() + ": " + firstLine(out));
            }
            return parse(out).orElseThrow(() -> new IOException("unexpected nvidia-smi output: " + firstLine(out)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running nvidia-smi", e);
        } finally {
            p.destroyForcibly();
        }
    }

    /**
     * Parses the output of the agent's query ({@link #QUERY}, no header, no units), one line per GPU.
     * Returns empty when a line does not have the expected shape (an error message, say).
     */
    public static Optional<List<Gpu>> parse(String output) {
        List<Gpu> gpus = new ArrayList<>();
        for (String line : output.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            List<String> cells = cells(line);
            // index, uuid, then the name (which may itself contain commas), then three numbers
            if (cells.size() < 6 || !cells.get(0).matches("\\d+")) {
                return Optional.empty();
            }
            int n = cells.size();
            String name = String.join(", ", cells.subList(2, n - 3));
            gpus.add(gpu(name, cells.get(n - 3), cells.get(n - 2), cells.get(n - 1)));
        }
        return gpus.isEmpty() ? Optional.empty() : Optional.of(List.copyOf(gpus));
    }

    /**
     * Parses {@code --format=csv} output with a header line (units allowed), picking the columns by
     * name. Used for recorded samples of other queries; returns empty when a column is missing.
     */
    public static Optional<List<Gpu>> parseWithHeader(String output) {
        String[] lines = output.split("\n");
        if (lines.length < 2) {
            return Optional.empty();
        }
        List<String> header = cells(lines[0]);
        Map<String, Integer> column = new HashMap<>();
        for (int i = 0; i < header.size(); i++) {
            String h = header.get(i);
            int unit = h.indexOf(" [");
            column.put((unit >= 0 ? h.substring(0, unit) : h).trim().toLowerCase(Locale.ROOT), i);
        }
        Integer name = column.get("name");
        Integer util = column.get("utilization.gpu");
        Integer used = column.get("memory.used");
        Integer total = column.get("memory.total");
        if (name == null || util == null || used == null || total == null) {
            return Optional.empty();
        }
        List<Gpu> gpus = new ArrayList<>();
        for (int i = 1; i < lines.length; i++) {
            if (lines[i].isBlank()) {
                continue;
            }
            List<String> cells = cells(lines[i]);
            if (cells.size() != header.size()) {
                return Optional.empty();
            }
            gpus.add(gpu(cells.get(name), cells.get(util), cells.get(used), cells.get(total)));
        }
        return gpus.isEmpty() ? Optional.empty() : Optional.of(List.copyOf(gpus));
    }

    private static Gpu gpu(String name, String utilization, String used, String total) {
        Double util = number(utilization);
        String cleanName = name.isBlank() || name.startsWith("[") ? null : name;
        if (cleanName != null && cleanName.length() > HeartbeatRules.MAX_TEXT_LENGTH) {
            cleanName = cleanName.substring(0, HeartbeatRules.MAX_TEXT_LENGTH);
        }
        return new Gpu(cleanName,
                util == null ? null : Math.max(0.0, Math.min(1.0, util / 100.0)),
                whole(number(used)),
                whole(number(total)));
    }

    /** Returns the number in a cell, without a unit such as {@code %} or {@code MiB}, or null for [N/A] and friends. */
    private static Double number(String cell) {
        String c = cell.trim();
        int space = c.indexOf(' ');
        if (space > 0) {
            c = c.substring(0, space);
        }
        try {
            double d = Double.parseDouble(c);
            return Double.isFinite(d) && d >= 0 ? d : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static Long whole(Double d) {
        return d == null ? null : Math.round(d);
    }

    private static List<String> cells(String line) {
        List<String> cells = new ArrayList<>();
        for (String c : line.split(",", -1)) {
            cells.add(c.strip());
        }
        return cells;
    }

    private static String firstLine(String s) {
        String t = s.strip();
        int nl = t.indexOf('\n');
        String line = nl < 0 ? t : t.substring(0, nl);
        return line.length() > 200 ? line.substring(0, 200) : line;
    }
}
