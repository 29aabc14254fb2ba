package io.heartgate.loadgen;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.heartgate.protocol.Durations;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Holds a run's results: counts, exact percentiles of time to first token and total time over the
 * requests that ended well, breakdowns by model and key, and every request. Written as JSON by
 * {@link #write} and summarised in one table row by {@link #row()}. Immutable.
 *
 * @param label the row's name
 * @param config the configuration, keys shown by their labels only
 * @param counts what happened to the requests planned
 * @param elapsedMs from the start to the last answer or the final deadline
 * @param achievedRate requests sent per second of the arrival window
 * @param goodput requests that ended well per second elapsed
 * @param ttftMs time to first token of the requests that ended well with some content
 * @param totalMs total time of the requests that ended well
 * @param waitedOnLoad requests whose answer reported a positive Ollama {@code load_duration}
 * @param statuses how many answers had each HTTP status
 * @param models the breakdown by model, in the mix's order
 * @param keys the breakdown by key label, in the keys' order; empty without keys
 * @param requests every request sent or dropped, by scheduled start
 */
public record Report(String label, Map<String, Object> config, Counts counts, double elapsedMs, double achievedRate,
                     double goodput, Percentiles ttftMs, Percentiles totalMs, long waitedOnLoad,
                     Map<String, Long> statuses, Map<String, Breakdown> models, Map<String, Breakdown> keys,
                     List<Sample> requests) {

    /** The column names {@link #row()} fills. */
    public static final String HEADER = String.format(Locale.ROOT, Row.FORMAT, "label", "rate", "sent", "ok", "failed",
            "ttft_p50_ms", "ttft_p99_ms", "total_p50_ms", "total_p99_ms", "waited_load");

    /**
     * Counts the requests. {@code scheduled = ok + failed + dropped + skipped}; {@code timedOut} is
     * part of {@code failed}.
     *
     * @param scheduled requests the plan asked for: conversations times turns
     * @param sent requests sent
     * @param ok requests that ended well
     * @param failed requests sent that did not
     * @param timedOut of those, the ones with no complete answer in time
     * @param dropped arrivals not sent because of the in-flight limit
     * @param skipped later turns never sent because their conversation had failed, was dropped or the run ended
     * @param failedByKind failures by kind: {@code http_503}, {@code timeout}, {@code connect}, {@code cut}, ...
     */
    public record Counts(long scheduled, long sent, long ok, long failed, long timedOut, long dropped, long skipped,
                         Map<String, Long> failedByKind) {
    }

    /**
     * Summarises the requests of one model or one key.
     *
     * @param count requests sent
     * @param ok those that ended well
     * @param dropped arrivals not sent
     * @param ttftP50 median time to first token of those that ended well, null when none did
     * @param ttftP99 its 99th percentile
     */
    public record Breakdown(long count, long ok, long dropped, Double ttftP50, Double ttftP99) {
    }

    /** Builds the report of {@code result}, a run of {@code config}. */
    public static Report of(LoadConfig config, Runner.Result result) {
        List<Sample> all = result.samples();
        List<Sample> sent = all.stream().filter(Sample::sent).toList();
        List<Sample> ok = sent.stream().filter(Sample::ok).toList();
        long dropped = all.size() - sent.size();
        Map<String, Long> byKind = new TreeMap<>(sent.stream().filter(s -> !s.ok())
                .collect(Collectors.groupingBy(Sample::kind, Collectors.counting())));
        long timedOut = sent.stream().filter(s -> s.outcome() == Outcome.TIMEOUT).count();
        Counts counts = new Counts(result.scheduled(), sent.size(), ok.size(), sent.size() - ok.size(), timedOut,
                dropped, result.scheduled() - all.size(), byKind);
        Map<String, Long> statuses = new TreeMap<>(sent.stream().filter(s -> s.status() > 0)
                .collect(Collectors.groupingBy(s -> Integer.toString(s.status()), Collectors.counting())));
        double window = config.duration().toNanos() / 1e9;
        double elapsed = result.elapsedNanos() / 1e9;
        Map<String, Breakdown> keys = new LinkedHashMap<>();
        Keys.labels(config.keys()).forEach(label -> keys.put(label, null));
        return new Report(config.label(), echo(config), counts, Percentiles.round(result.elapsedNanos() / 1e6),
                round2(sent.size() / window), round2(elapsed > 0 ? ok.size() / elapsed : 0),
                Percentiles.of(ok.stream().mapToDouble(Sample::ttftMs).filter(t -> t >= 0).toArray()),
                Percentiles.of(ok.stream().mapToDouble(Sample::totalMs).toArray()),
                sent.stream().filter(Sample::waitedOnLoad).count(), statuses,
                breakdown(all, Sample::model, new LinkedHashMap<>(config.mix().shares())),
                breakdown(all, Sample::key, keys), all);
    }

    /** Fills {@code order}'s keys (and any others met, after them) with the breakdown of their samples. */
    private static Map<String, Breakdown> breakdown(List<Sample> all, Function<Sample, String> by, Map<String, ?> order) {
        Map<String, List<Sample>> groups = all.stream().filter(s -> by.apply(s) != null)
                .collect(Collectors.groupingBy(by));
        Map<String, Breakdown> out = new LinkedHashMap<>();
        order.keySet().forEach(k -> out.put(k, summary(groups.getOrDefault(k, List.of()))));
        groups.forEach((k, v) -> out.computeIfAbsent(k, x -> summary(v)));
        return out;
    }

    private static Breakdown summary(List<Sample> group) {
        List<Sample> sent = group.stream().filter(Sample::sent).toList();
        Percentiles ttft = Percentiles.of(sent.stream().filter(Sample::ok).mapToDouble(Sample::ttftMs)
                .filter(t -> t >= 0).toArray());
        return new Breakdown(sent.size(), ttft.count(), group.size() - sent.size(), ttft.p50(), ttft.p99());
    }

    private static Map<String, Object> echo(LoadConfig c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("url", c.url().toString());
        m.put("api", c.api().name().toLowerCase(Locale.ROOT));
        m.put("rate", c.rate());
        m.put("duration", Durations.format(c.duration()));
        m.put("arrivals", c.arrivals().name().toLowerCase(Locale.ROOT));
        m.put("seed", c.seed());
        m.put("timeout", Durations.format(c.timeout()));
        m.put("maxInFlight", c.maxInFlight());
        m.put("mix", c.mix().shares());
        m.put("turns", c.turns());
        m.put("thinkTime", Durations.format(c.thinkTime()));
        m.put("keys", Keys.labels(c.keys()));
        m.put("maxTokens", c.maxTokens());
        m.put("minTokens", c.minTokens());
        m.put("promptWords", c.promptWords());
        m.put("promptTokens", c.promptTokens());
        m.put("systemPrompts", c.sessions().systemPrompts());
        m.put("systemWords", c.sessions().systemWords());
        m.put("systemTokens", c.sessions().systemTokens());
        m.put("systemSeed", c.sessions().systemSeed());
        m.put("sessionHeader", c.sessions().header());
        m.put("sessionShare", c.sessions().share());
        return m;
    }

    private static double round2(double v) {
        return Math.round(v * 100) / 100.0;
    }

    /** Returns the table row: label, rate, sent, ok, failed, TTFT p50/p99, total p50/p99 (ms), waited on load. */
    public String row() {
        return String.format(Locale.ROOT, Row.FORMAT, label, BigDecimal.valueOf(((Number) config.get("rate")).doubleValue())
                        .stripTrailingZeros().toPlainString(),
                counts.sent(), counts.ok(), counts.failed(), Row.ms(ttftMs.p50()), Row.ms(ttftMs.p99()),
                Row.ms(totalMs.p50()), Row.ms(totalMs.p99()), waitedOnLoad);
    }

    /** Writes the report as indented JSON to {@code file}, replacing it. */
    public void write(Path file) throws IOException {
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), this);
    }

    /** Formats the table's cells. */
    private static final class Row {
        static final String FORMAT = "%-20s %8s %7s %7s %7s %11s %11s %12s %12s %11s";

        static String ms(Double v) {
            return v == null ? "-" : String.format(Locale.ROOT, "%.1f", v);
        }
    }
}
