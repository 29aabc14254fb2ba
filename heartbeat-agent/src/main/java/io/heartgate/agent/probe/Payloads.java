package io.heartgate.agent.probe;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.heartgate.protocol.HeartbeatRules;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.OptionalDouble;
import java.util.Set;

/**
 * Reads models and load figures out of what each backend serves. Every method tolerates fields it
 * does not know and returns empty results, not exceptions, for payloads of the wrong shape, because
 * the servers change their payloads between versions. Stateless and thread-safe.
 */
public final class Payloads {

    private static final ObjectMapper JSON = new ObjectMapper();

    private Payloads() {
    }

    /** Returns the model names of an Ollama {@code /api/tags} or {@code /api/ps} answer. */
    public static List<String> ollamaModels(String json) {
        JsonNode models = read(json).path("models");
        Set<String> names = new LinkedHashSet<>();
        for (JsonNode m : models) {
            String name = m.path("name").asText(m.path("model").asText(""));
            addModel(names, name);
        }
        return List.copyOf(names);
    }

    /**
     * Returns what an Ollama {@code /api/tags} answer says of each model: size, digest, modified
     * time and details, as written. Entries without a name, or with texts or lists over the
     * heartbeat's limits, are left out rather than failing the whole heartbeat.
     */
    public static List<ModelInfo> ollamaModelInfo(String json) {
        List<ModelInfo> out = new ArrayList<>();
        Set<String> seen = new LinkedHashSet<>();
        for (JsonNode m : read(json).path("models")) {
            String name = m.path("name").asText(m.path("model").asText(""));
            if (name.isEmpty() || !seen.add(name) || out.size() >= HeartbeatRules.MAX_MODELS) {
                continue;
            }
            JsonNode d = m.path("details");
            ModelInfo.Details details = null;
            if (d.isObject()) {
                List<String> families = new ArrayList<>();
                for (JsonNode f : d.path("families")) {
                    if (f.isTextual() && families.size() < HeartbeatRules.MAX_FAMILIES) {
                        families.add(f.textValue());
                    }
                }
                details = new ModelInfo.Details(text(d, "parent_model"), text(d, "format"), text(d, "family"), families,
                        text(d, "parameter_size"), text(d, "quantization_level"));
            }
            ModelInfo info = new ModelInfo(name, number(m, "size"), text(m, "digest"), text(m, "modified_at"), details);
            if (HeartbeatRules.checkCatalogue(List.of(info), List.of()).isEmpty()) {
                out.add(info);
            }
        }
        return List.copyOf(out);
    }

    /** Returns the models an Ollama {@code /api/ps} answer says are loaded, within the heartbeat's limits. */
    public static List<LoadedModel> ollamaLoaded(String json) {
        List<LoadedModel> out = new ArrayList<>();
        for (JsonNode m : read(json).path("models")) {
            String name = m.path("name").asText(m.path("model").asText(""));
            if (name.isEmpty() || out.size() >= HeartbeatRules.MAX_LOADED) {
                continue;
            }
            JsonNode ctx = m.path("context_length");
            LoadedModel loaded = new LoadedModel(name, number(m, "size"), number(m, "size_vram"), text(m, "expires_at"),
                    ctx.canConvertToInt() && ctx.isIntegralNumber() ? ctx.intValue() : null);
            if (HeartbeatRules.checkCatalogue(List.of(), List.of(loaded)).isEmpty()) {
                out.add(loaded);
            }
        }
        return List.copyOf(out);
    }

    private static String text(JsonNode parent, String field) {
        JsonNode v = parent.path(field);
        return v.isTextual() ? v.textValue() : null;
    }

    private static Long number(JsonNode parent, String field) {
        JsonNode v = parent.path(field);
        return v.isIntegralNumber() && v.canConvertToLong() ? v.longValue() : null;
    }

    /** Returns the model ids of an OpenAI-style {@code /v1/models} answer (vLLM, llama.cpp, SGLang, TGI). */
    public static List<String> openAiModels(String json) {
        Set<String> names = new LinkedHashSet<>();
        for (JsonNode m : read(json).path("data")) {
            addModel(names, m.path("id").asText(""));
        }
        return List.copyOf(names);
    }

    /** Returns the model of a TGI {@code /info} answer, as a one-element list, or empty. */
    public static List<String> tgiModels(String json) {
        Set<String> names = new LinkedHashSet<>();
        addModel(names, read(json).path("model_id").asText(""));
        return List.copyOf(names);
    }

    /**
     * Returns the requests a TGI server takes at once from its {@code /info}: {@code max_batch_size}
     * where the operator set one (TGI then never batches more), else {@code max_concurrent_requests},
     * the router's admission limit (running and queued together: beyond it TGI refuses with 429); or
     * {@code null} when neither is there or in the heartbeat's range. TGI batches by tokens ({@code
     * max_batch_total_tokens}), so without {@code max_batch_size} no request count is exact: the
     * admission limit at least keeps TGI from refusing.
     */
    public static Integer tgiCapacity(String json) {
        JsonNode info = read(json);
        Integer admitted = positiveInt(info.path("max_concurrent_requests"));
        Integer batch = positiveInt(info.path("max_batch_size"));
        Integer capacity = batch != null && (admitted == null || batch < admitted) ? batch : admitted;
        return capacity == null ? null : inRange(capacity);
    }

    /**
     * Returns the slot count a llama.cpp {@code /props} answer states ({@code total_slots}, its
     * {@code --parallel}), or {@code null} when absent: what a server run with {@code --no-slots}
     * still says.
     */
    public static Integer llamaCppPropsSlots(String json) {
        Integer slots = positiveInt(read(json).path("total_slots"));
        return slots == null ? null : inRange(slots);
    }

    private static Integer positiveInt(JsonNode n) {
        return n.isIntegralNumber() && n.canConvertToInt() && n.intValue() > 0 ? n.intValue() : null;
    }

    /** Returns the slot count of a llama.cpp {@code /slots} answer, or {@code null} when it is not a list of slots. */
    public static Integer llamaCppSlotCount(String json) {
        JsonNode slots = read(json);
        return slots.isArray() ? inRange(slots.size()) : null;
    }

    private static Integer inRange(int capacity) {
        return HeartbeatRules.checkCapacity(capacity).isEmpty() ? capacity : null;
    }

    /** Returns whether an Ollama {@code /api/version} answer looks like Ollama's. */
    public static boolean isOllamaVersion(String json) {
        return read(json).path("version").isTextual();
    }

    /** Returns whether a {@code /info} answer looks like TGI's. */
    public static boolean isTgiInfo(String json) {
        return read(json).path("model_id").isTextual();
    }

    /** Returns whether a {@code /props} answer looks like llama.cpp's. */
    public static boolean isLlamaCppProps(String json) {
        return read(json).has("default_generation_settings");
    }

    /**
     * Returns vLLM's load from {@code /metrics}: running and waiting requests summed over engines and
     * models, and KV-cache usage from {@code kv_cache_usage_perc} (newer) or {@code gpu_cache_usage_perc}
     * (older), the largest over engines.
     */
    public static Load vllmLoad(String metrics) {
        return vllmLoad(PrometheusText.parse(metrics));
    }

    /** As {@link #vllmLoad(String)}, from an exposition already parsed. */
    public static Load vllmLoad(PrometheusText p) {
        OptionalDouble kv = p.max("vllm:kv_cache_usage_perc");
        if (kv.isEmpty()) {
            kv = p.max("vllm:gpu_cache_usage_perc");
        }
        return new Load(count(p.sum("vllm:num_requests_running")), count(p.sum("vllm:num_requests_waiting")),
                fraction(kv));
    }

    /**
     * The prefix cache's cumulative counters, in prompt tokens: looked up, and found cached.
     *
     * @param queries tokens looked up
     * @param hits tokens found
     */
    public record PrefixCounters(double queries, double hits) {

        /**
         * Returns the hit rate since {@code before}, or {@code null} when nothing was looked up in
         * between or the counters went back (the server restarted).
         */
        public Double rateSince(PrefixCounters before) {
            double q = queries - before.queries;
            double h = hits - before.hits;
            if (q <= 0 || h < 0 || h > q) {
                return null;
            }
            return h / q;
        }
    }

    /**
     * Returns vLLM's prefix-cache counters from {@code /metrics}, summed over engines:
     * {@code vllm:prefix_cache_queries_total} and {@code vllm:prefix_cache_hits_total} (v1), each
     * else its deprecated {@code vllm:gpu_prefix_cache_*_total} (0.10 has both and may be scraped
     * with either cut); {@code null} when the server has neither.
     */
    public static PrefixCounters vllmPrefixCache(String metrics) {
        return vllmPrefixCache(PrometheusText.parse(metrics));
    }

    /** As {@link #vllmPrefixCache(String)}, from an exposition already parsed. */
    public static PrefixCounters vllmPrefixCache(PrometheusText p) {
        OptionalDouble queries = p.sum("vllm:prefix_cache_queries_total");
        if (queries.isEmpty()) {
            queries = p.sum("vllm:gpu_prefix_cache_queries_total");
        }
        OptionalDouble hits = p.sum("vllm:prefix_cache_hits_total");
        if (hits.isEmpty()) {
            hits = p.sum("vllm:gpu_prefix_cache_hits_total");
        }
        return queries.isEmpty() || hits.isEmpty() ? null : new PrefixCounters(queries.getAsDouble(), hits.getAsDouble());
    }

    /** Returns TGI's load from {@code /metrics}: the current batch size and the queue size. */
    public static Load tgiLoad(String metrics) {
        PrometheusText p = PrometheusText.parse(metrics);
        return new Load(count(p.sum("tgi_batch_current_size")), count(p.sum("tgi_queue_size")), null);
    }

    /** Returns llama.cpp's load from {@code /metrics} (started with {@code --metrics}). */
    public static Load llamaCppLoad(String metrics) {
        return llamaCppLoad(PrometheusText.parse(metrics));
    }

    /** As {@link #llamaCppLoad(String)}, from an exposition already parsed. */
    public static Load llamaCppLoad(PrometheusText p) {
        return new Load(count(p.sum("llamacpp:requests_processing")), count(p.sum("llamacpp:requests_deferred")),
                fraction(p.max("llamacpp:kv_cache_usage_ratio")));
    }

    /**
     * A server's cumulative prefill counters: the prompt tokens it prefilled, and the seconds it spent
     * prefilling them. {@link PrefillSpeed} divides their growth between two readings.
     *
     * @param tokens prompt tokens prefilled since the server started (cached ones not included)
     * @param seconds seconds spent prefilling them
     */
    public record PrefillCounters(double tokens, double seconds) {
    }

    /**
     * Returns llama.cpp's prefill counters from {@code /metrics}: {@code llamacpp:prompt_tokens_total}
     * and {@code llamacpp:prompt_seconds_total}; {@code null} when either is absent.
     *
     * <p>These rather than the {@code llamacpp:prompt_tokens_seconds} gauge ("Average prompt throughput
     * in tokens/s"), which is the same quotient over a window the agent does not own and that differs
     * between builds: since anyone's last scrape of {@code /metrics} in most (a Prometheus scraping the
     * same server shortens the agent's window to whatever it left), since the server started in others;
     * and 0 when nothing was prefilled in it. The counters' growth covers exactly the agent's period, and
     * a fall shows a restart. What the seconds are depends on the build: newer ones time each decode
     * batch that carries prompt tokens, so the quotient is the server's prefill throughput; older ones add
     * up each request's own prompt time, so prompts prefilled together count their shared time once each
     * and the quotient is the speed one request sees, below the throughput when several prefill at once.
     */
    public static PrefillCounters llamaCppPrefill(PrometheusText p) {
        OptionalDouble tokens = p.sum("llamacpp:prompt_tokens_total");
        OptionalDouble seconds = p.sum("llamacpp:prompt_seconds_total");
        return tokens.isEmpty() || seconds.isEmpty() ? null
                : new PrefillCounters(tokens.getAsDouble(), seconds.getAsDouble());
    }

    /** Returns llama.cpp's load from {@code /slots}: the number of slots processing. */
    public static Load llamaCppSlotsLoad(String json) {
        JsonNode slots = read(json);
        if (!slots.isArray()) {
            return Load.UNKNOWN;
        }
        int busy = 0;
        for (JsonNode slot : slots) {
            if (slot.path("is_processing").asBoolean(false)) {
                busy++;
            }
        }
        return new Load(busy, null, null);
    }

    private static void addModel(Set<String> names, String name) {
        // A name the heartbeat contract would reject is dropped rather than failing the whole heartbeat.
        if (!name.isBlank() && name.length() <= HeartbeatRules.MAX_MODEL_LENGTH
                && names.size() < HeartbeatRules.MAX_MODELS) {
            names.add(name);
        }
    }

    private static Integer count(OptionalDouble value) {
        if (value.isEmpty() || value.getAsDouble() < 0) {
            return null;
        }
        return (int) Math.min(Integer.MAX_VALUE, Math.round(value.getAsDouble()));
    }

    private static Double fraction(OptionalDouble value) {
        if (value.isEmpty()) {
            return null;
        }
        return Math.max(0.0, Math.min(1.0, value.getAsDouble()));
    }

    private static JsonNode read(String json) {
        try {
            JsonNode node = JSON.readTree(json);
            return node == null ? JSON.missingNode() : node;
        } catch (JsonProcessingException e) {
            return JSON.missingNode();
        }
    }

    /** Returns the list with {@code extra} names appended after the first list's, without duplicates. */
    static List<String> union(List<String> first, List<String> extra) {
        List<String> out = new ArrayList<>(first);
        for (String e : extra) {
            if (!out.contains(e) && out.size() < HeartbeatRules.MAX_MODELS) {
                out.add(e);
            }
        }
        return List.copyOf(out);
    }
}
