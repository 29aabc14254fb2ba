package io.heartgate.scheduler.usage;

import io.heartgate.scheduler.table.Node;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts requests and tokens per API key and model: {@code heartgate_key_requests_total{key,model,status}}
 * for every answer and {@code heartgate_tokens_total{key,model,type}} ({@code prompt},
 * {@code completion}) for what the nodes reported using. {@code key} is empty when the proxy needs no key; {@code model} is {@code none} for answers
 * no node gave (the proxy's own refusals), so that labels only ever hold models a node served.
 * Keeps totals per key for the dashboard. Thread-safe; a known key and model allocate nothing.
 */
public final class UsageAccounting {

    /** One key's totals, for the dashboard. */
    public record KeyTotals(long requests, long promptTokens, long completionTokens) {
    }

    private final MeterRegistry registry;
    /** key -> model -> meters. */
    private final Map<String, Map<String, Meters>> meters = new ConcurrentHashMap<>();
    private final Map<String, Totals> totals = new ConcurrentHashMap<>();

    private final class Meters {
        final String key;
        final String model;
        final AtomicReferenceArray<Counter> byStatus = new AtomicReferenceArray<>(600);
        final Counter prompt;
        final Counter completion;

        Meters(String key, String model) {
            this.key = key;
            this.model = model;
            this.prompt = tokens(key, model, "prompt");
            this.completion = tokens(key, model, "completion");
        }

        Counter status(int status) {
            int s = status >= 100 && status < 600 ? status : 0;
            Counter c = byStatus.get(s);
            if (c == null) {
                c = Counter.builder("heartgate_key_requests")
                        .description("Answers by API key (empty without keys), model (none when no node answered) "
                                + "and HTTP status (0: cut short)")
                        .tags("key", key, "model", model, "status", Integer.toString(s)).register(registry);
                byStatus.set(s, c);
            }
            return c;
        }
    }

    private static final class Totals {
        final LongAdder requests = new LongAdder();
        final LongAdder prompt = new LongAdder();
        final LongAdder completion = new LongAdder();
    }

    /**
     * Returns {@code model} as the usage metrics label it for an answer {@code node} gave: the model
     * when the node lists it, {@code other} when the node serves any model (the name is then the
     * client's choice, which must not grow the labels), {@code null} when the request named none.
     */
    public static String modelLabel(String model, Node node) {
        if (model == null) {
            return null;
        }
        return node.models().contains(model) ? model : "other";
    }

    /** Creates the accounts over {@code registry}. */
    public UsageAccounting(MeterRegistry registry) {
        this.registry = registry;
    }

    private Counter tokens(String key, String model, String type) {
        return Counter.builder("heartgate_tokens")
                .description("Tokens the nodes reported using, by API key, model and type (prompt or completion)")
                .tags("key", key, "model", model, "type", type).register(registry);
    }

    private Meters meters(String caller, String model) {
        String key = caller == null ? "" : caller;
        String m = model == null ? "none" : model;
        Map<String, Meters> byModel = meters.get(key);
        if (byModel == null) {
            byModel = meters.computeIfAbsent(key, k -> new ConcurrentHashMap<>());
        }
        Meters found = byModel.get(m);
        return found != null ? found : byModel.computeIfAbsent(m, k -> new Meters(key, k));
    }

    private Totals totals(String caller) {
        String key = caller == null ? "" : caller;
        Totals t = totals.get(key);
        return t != null ? t : totals.computeIfAbsent(key, k -> new Totals());
    }

    /**
     * Counts one answer of {@code caller} (an API key's name, or {@code null}) with {@code status}; {@code model}
     * is the model a node served, or {@code null} when no node answered.
     */
    public void answered(String caller, String model, int status) {
        meters(caller, model).status(status).increment();
        totals(caller).requests.increment();
    }

    /** Counts the tokens a node reported for an answer of {@code caller} for {@code model}. */
    public void used(String caller, String model, UsageReader.Usage usage) {
        Meters m = meters(caller, model);
        m.prompt.increment(usage.prompt());
        m.completion.increment(usage.completion());
        Totals t = totals(caller);
        t.prompt.add(usage.prompt());
        t.completion.add(usage.completion());
    }

    /** Returns each key's totals since start, by name ("" for callers without a key). */
    public Map<String, KeyTotals> byKey() {
        Map<String, KeyTotals> out = new TreeMap<>();
        totals.forEach((k, t) -> out.put(k, new KeyTotals(t.requests.sum(), t.prompt.sum(), t.completion.sum())));
        return out;
    }
}
