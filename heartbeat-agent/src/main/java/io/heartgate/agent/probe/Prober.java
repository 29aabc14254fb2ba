package io.heartgate.agent.probe;

import io.heartgate.protocol.Load;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Probes one inference server: health first, then models and load as the backend exposes them.
 *
 * <p>With {@link Backend#AUTO} the backend is detected on the first successful contact and again
 * each time the server comes back after failing (it may have been replaced by another kind on the
 * same port). A model or load fetch that fails keeps the last models known and omits the load; only
 * the health check decides UP or DOWN. Not thread-safe: one probe loop owns it.
 *
 * <p>For Ollama it also asks {@code POST /api/show} of each model listed, once per name and digest,
 * whether its chat continues a final assistant message ({@link OllamaShow#prefill}), and reports
 * that as the model's {@link ModelInfo#prefill()}: at most {@link #SHOWS_PER_PROBE} models a probe,
 * so a node with many models learns them over several probes rather than stalling one. A model whose
 * show fails stays unknown and is asked again {@link #SHOW_RETRY} later at the soonest.
 *
 * <p>For llama.cpp it reports the prefill speed, {@link Load#prefillTps()}, from the growth of its
 * prompt counters between probes ({@link Payloads#llamaCppPrefill}, {@link PrefillSpeed}); a probe that
 * fails, or finds no metrics, forgets it. vLLM's metrics give no sound figure, so none is reported
 * for it: its {@code vllm:prompt_tokens_total} counts whole prompts, prefix-cache hits included, when
 * each request's first token comes, while {@code vllm:request_prefill_time_seconds} is observed only
 * when a request finishes and spans the request's wall time from being scheduled to its first token,
 * shared with the rest of each batch; between two probes the two describe different requests. TGI,
 * Ollama and plain OpenAI-compatible servers report none either.
 */
public final class Prober {

    private static final Logger log = LoggerFactory.getLogger(Prober.class);

    /**
     * Show calls a probe makes at most. Two keep an Ollama probe (version, tags, ps and the shows)
     * within the five requests the agent's staleness bound allows a probe.
     */
    static final int SHOWS_PER_PROBE = 2;
    /** The soonest a model whose show failed is asked again. */
    static final Duration SHOW_RETRY = Duration.ofMinutes(1);

    private final Backend configured;
    private final HttpGetter http;
    private final String nodeId;
    private final Clock clock;
    private Backend detected;
    private List<String> lastModels = List.of();
    private List<ModelInfo> lastModelInfo = List.of();
    /**
     * What {@code /api/ps} said at the last probe that read it. Kept when a read fails, as the models
     * are: a scheduler taking "nothing loaded" at face value would move a hot model's traffic away.
     */
    private List<LoadedModel> loaded = List.of();
    /**
     * What the server said of its capacity at the last probe that read it (TGI, llama.cpp); cleared
     * when the server answers without it (a llama.cpp restarted with {@code --no-slots} and no {@code
     * /props} figure), kept when it cannot be reached.
     */
    private Integer capacity;
    /** vLLM's prefix-cache counters at the previous probe, for the hit rate between probes. */
    private Payloads.PrefixCounters prefixBefore;
    /** llama.cpp's prefill speed, measured from its counters between probes. */
    private final PrefillSpeed prefill = new PrefillSpeed();
    /** What {@code /api/show} said of each model listed, by name. */
    private final Map<String, Shown> shown = new HashMap<>();

    /**
     * What one show call said of a model.
     *
     * @param digest the digest the model had when asked
     * @param prefill its answer, {@code null} when unknown
     * @param failedAt when the call failed, or {@code null} when it answered
     */
    record Shown(String digest, Boolean prefill, Instant failedAt) {
    }

    /** Creates a prober on the system clock; {@code nodeId} only labels log lines. */
    public Prober(Backend configured, HttpGetter http, String nodeId) {
        this(configured, http, nodeId, Clock.systemUTC());
    }

    /** Creates a prober; {@code clock} times the retries of failed show calls. */
    public Prober(Backend configured, HttpGetter http, String nodeId, Clock clock) {
        this.configured = configured;
        this.http = http;
        this.nodeId = nodeId;
        this.clock = clock;
        this.detected = configured == Backend.AUTO ? null : configured;
    }

    /** Probes the server once; never throws. */
    public ProbeResult probe() {
        if (detected == null) {
            try {
                detected = detect();
            } catch (IOException e) {
                return ProbeResult.down(null, lastModels, "unreachable: " + describe(e));
            }
            if (detected == null) {
                return ProbeResult.down(null, lastModels, "no known inference API answered");
            }
            log.info("Node {} backend detected: {}", nodeId, detected.label());
            capacity = null; // another server may have taken the port: only what it says counts
        }
        Backend backend = detected;
        String unhealthy = health(backend);
        if (unhealthy != null) {
            prefill.reset();
            if (configured == Backend.AUTO) {
                detected = null; // detect again when it comes back: it may be another server
            }
            return ProbeResult.down(backend, lastModels, unhealthy);
        }
        List<String> models = models(backend);
        if (models != null) {
            lastModels = models;
        }
        if (backend != Backend.OLLAMA) {
            lastModelInfo = List.of();
            loaded = List.of();
            shown.clear();
        }
        Load load = load(backend);
        return new ProbeResult(true, backend, lastModels, load, "ok", lastModelInfo, loaded, capacity);
    }

    /** Returns the backend detected, or {@code null} before detection. */
    public Backend detected() {
        return detected;
    }

    /**
     * Finds which API the server speaks; returns {@code null} when it answers but speaks none we know.
     *
     * @throws IOException when it cannot be reached at all
     */
    Backend detect() throws IOException {
        HttpGetter.Response r = http.get("/api/version");
        if (r.ok() && Payloads.isOllamaVersion(r.body())) {
            return Backend.OLLAMA;
        }
        r = quietly("/info");
        if (r != null && r.ok() && Payloads.isTgiInfo(r.body())) {
            return Backend.TGI;
        }
        r = quietly("/metrics");
        if (r != null && r.ok() && r.body().contains("vllm:")) {
            return Backend.VLLM;
        }
        if (r != null && r.ok() && r.body().contains("llamacpp:")) {
            return Backend.LLAMACPP;
        }
        r = quietly("/props");
        if (r != null && r.ok() && Payloads.isLlamaCppProps(r.body())) {
            return Backend.LLAMACPP;
        }
        r = quietly("/v1/models");
        if (r != null && r.ok() && r.body().contains("\"data\"")) {
            return Backend.OPENAI;
        }
        return null;
    }

    /** Returns why the server is unhealthy, or {@code null} when it is healthy. */
    private String health(Backend backend) {
        String path = switch (backend) {
            case OLLAMA -> "/api/version";
            case OPENAI -> "/v1/models";
            default -> "/health";
        };
        try {
            HttpGetter.Response r = http.get(path);
            return r.ok() ? null : "GET " + path + " answered " + r.status();
        } catch (IOException e) {
            return "GET " + path + " failed: " + describe(e);
        }
    }

    /** Returns the models, or {@code null} when they could not be read this time. */
    private List<String> models(Backend backend) {
        switch (backend) {
            case OLLAMA -> {
                HttpGetter.Response tags = quietly("/api/tags");
                HttpGetter.Response ps = quietly("/api/ps");
                if ((tags == null || !tags.ok()) && (ps == null || !ps.ok())) {
                    return null;
                }
                // Tags are what the node can serve; loaded models (ps) are added in case tags failed.
                List<String> installed = tags != null && tags.ok() ? Payloads.ollamaModels(tags.body()) : List.of();
                List<String> inMemory = ps != null && ps.ok() ? Payloads.ollamaModels(ps.body()) : List.of();
                if (ps != null && ps.ok()) {
                    loaded = Payloads.ollamaLoaded(ps.body());
                }
                if (tags != null && tags.ok()) {
                    lastModelInfo = withPrefill(Payloads.ollamaModelInfo(tags.body()));
                }
                return Payloads.union(installed, inMemory);
            }
            case TGI -> {
                HttpGetter.Response info = quietly("/info");
                if (info == null || !info.ok()) {
                    return null;
                }
                capacity = Payloads.tgiCapacity(info.body());
                return Payloads.tgiModels(info.body());
            }
            default -> {
                HttpGetter.Response r = quietly("/v1/models");
                return r != null && r.ok() ? Payloads.openAiModels(r.body()) : null;
            }
        }
    }

    /**
     * Returns {@code models} each with its {@code prefill} as {@code /api/show} told it for the model's
     * current digest, asking about the ones due ({@link #showDue}), at most {@link #SHOWS_PER_PROBE}
     * and none more once one could not be reached. Forgets the models no longer listed.
     */
    private List<ModelInfo> withPrefill(List<ModelInfo> models) {
        Set<String> listed = new HashSet<>();
        models.forEach(m -> listed.add(m.name()));
        shown.keySet().retainAll(listed);
        Instant now = clock.instant();
        int asked = 0;
        List<ModelInfo> out = new ArrayList<>(models.size());
        for (ModelInfo m : models) {
            if (asked < SHOWS_PER_PROBE && showDue(shown.get(m.name()), m.digest(), now)) {
                asked++;
                try {
                    shown.put(m.name(), show(m, now));
                } catch (IOException e) {
                    log.debug("Node {} POST /api/show for {} failed: {}", nodeId, m.name(), describe(e));
                    shown.put(m.name(), new Shown(m.digest(), null, now));
                    asked = SHOWS_PER_PROBE; // a server that cannot be reached is not asked again this probe
                }
            }
            Shown known = shown.get(m.name());
            boolean current = known != null && Objects.equals(known.digest(), m.digest());
            out.add(current ? m.withPrefill(known.prefill()) : m);
        }
        return List.copyOf(out);
    }

    /**
     * Returns whether a model with {@code digest} is to be shown now: never asked, asked about another
     * digest, or its last show failed at least {@link #SHOW_RETRY} ago.
     */
    static boolean showDue(Shown known, String digest, Instant now) {
        if (known == null || !Objects.equals(known.digest(), digest)) {
            return true;
        }
        return known.failedAt() != null && !now.isBefore(known.failedAt().plus(SHOW_RETRY));
    }

    /**
     * Asks {@code /api/show} about {@code model}; returns what it said, or a failure stamped {@code now}
     * when it answered with an error or with a body that is not a show answer.
     *
     * @throws IOException when the server could not be reached or did not answer in time
     */
    private Shown show(ModelInfo model, Instant now) throws IOException {
        HttpGetter.Response r = http.post("/api/show", OllamaShow.request(model.name()));
        OllamaShow show = r.ok() ? OllamaShow.read(r.body()) : null;
        if (show == null) {
            log.debug("Node {} POST /api/show for {} answered {}; asking again in {}", nodeId, model.name(),
                    r.status(), SHOW_RETRY);
            return new Shown(model.digest(), null, now);
        }
        Boolean prefill = OllamaShow.prefill(show.template(), show.renderer());
        log.debug("Node {} model {} (digest {}) continues a final assistant message: {}", nodeId, model.name(),
                model.digest(), prefill == null ? "unknown" : prefill);
        return new Shown(model.digest(), prefill, null);
    }

    private Load load(Backend backend) {
        switch (backend) {
            case VLLM -> {
                HttpGetter.Response r = quietly("/metrics");
                if (r == null || !r.ok()) {
                    return Load.UNKNOWN;
                }
                PrometheusText metrics = PrometheusText.parse(r.body());
                Payloads.PrefixCounters prefix = Payloads.vllmPrefixCache(metrics);
                Double rate = prefix == null || prefixBefore == null ? null : prefix.rateSince(prefixBefore);
                prefixBefore = prefix; // a failed read in between: the next rate covers both periods
                return Payloads.vllmLoad(metrics).withPrefixCacheHitRate(rate);
            }
            case TGI -> {
                HttpGetter.Response r = quietly("/metrics");
                return r != null && r.ok() ? Payloads.tgiLoad(r.body()) : Load.UNKNOWN;
            }
            case LLAMACPP -> {
                HttpGetter.Response slots = quietly("/slots");
                if (slots != null) {
                    capacity = slots.ok() ? Payloads.llamaCppSlotCount(slots.body()) : propsSlots();
                }
                HttpGetter.Response r = quietly("/metrics");
                if (r != null && r.ok() && r.body().contains("llamacpp:")) {
                    PrometheusText metrics = PrometheusText.parse(r.body());
                    Double prefillTps = prefill.next(Payloads.llamaCppPrefill(metrics));
                    return Payloads.llamaCppLoad(metrics).withPrefillTps(prefillTps);
                }
                prefill.reset();
                return slots != null && slots.ok() ? Payloads.llamaCppSlotsLoad(slots.body()) : Load.UNKNOWN;
            }
            default -> {
                return Load.UNKNOWN; // Ollama and plain OpenAI servers expose no load figures
            }
        }
    }

    /**
     * Returns the slot count llama.cpp's {@code /props} states, for a server whose {@code /slots} is
     * off ({@code --no-slots}: 501); the figure known before when {@code /props} cannot be reached, as
     * an unreachable {@code /slots} keeps it; {@code null} when {@code /props} answers without one.
     */
    private Integer propsSlots() {
        HttpGetter.Response props = quietly("/props");
        if (props == null) {
            return capacity;
        }
        return props.ok() ? Payloads.llamaCppPropsSlots(props.body()) : null;
    }

    private HttpGetter.Response quietly(String path) {
        try {
            return http.get(path);
        } catch (IOException e) {
            log.debug("Node {} GET {} failed: {}", nodeId, path, describe(e));
            return null;
        }
    }

    private static String describe(IOException e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null || m.isBlank() ? "" : " " + m);
    }
}
