package io.heartgate.protocol;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Checks the value rules of the version-1 heartbeat that do not depend on JSON. Shared by the
 * codec (for incoming messages) and {@link Heartbeat}'s constructor (for messages we build).
 */
public final class HeartbeatRules {

    /** Longest node id. */
    public static final int MAX_NODE_ID_LENGTH = 128;
    /** Most models one node may advertise. */
    public static final int MAX_MODELS = 1024;
    /** Longest model name. */
    public static final int MAX_MODEL_LENGTH = 256;
    /** Most GPUs one node may report; far above any real host. */
    public static final int MAX_GPUS = 64;
    /** Longest URL; longer ones are almost certainly garbage. */
    public static final int MAX_URL_LENGTH = 2048;
    /** Longest free-form string (instance, backend, GPU name). */
    public static final int MAX_TEXT_LENGTH = 256;
    public static final int MIN_WEIGHT = 1;
    public static final int MAX_WEIGHT = 1000;
    public static final int MIN_INTERVAL_MS = 100;
    public static final int MAX_INTERVAL_MS = 60_000;

    private HeartbeatRules() {
    }

    /** Returns whether {@code nodeId} is a valid node id; {@code null} is not. */
    public static boolean isValidNodeId(String nodeId) {
        return nodeId != null && !nodeId.isEmpty() && nodeId.length() <= MAX_NODE_ID_LENGTH && nodeIdChars(nodeId);
    }

    /** Says whether every character of {@code s} is one of {@code A-Za-z0-9._:-}. */
    private static boolean nodeIdChars(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
                    || c == '.' || c == '_' || c == ':' || c == '-')) {
                return false;
            }
        }
        return true;
    }

    /** Returns the broken rule for a node id, or empty when it is valid. */
    public static Optional<Rejection> checkNodeId(String nodeId, String field) {
        if (nodeId == null) {
            return reject(Rule.MISSING_FIELD, field, "is required");
        }
        if (nodeId.isEmpty() || nodeId.length() > MAX_NODE_ID_LENGTH) {
            return reject(Rule.INVALID_NODE_ID, field,
                    "must be 1 to " + MAX_NODE_ID_LENGTH + " characters, was " + nodeId.length());
        }
        if (!nodeIdChars(nodeId)) {
            return reject(Rule.INVALID_NODE_ID, field, "may only contain A-Za-z0-9._:-");
        }
        return Optional.empty();
    }

    /** Returns the broken rule for a node URL, or empty when it is an absolute http(s) URL with a host. */
    public static Optional<Rejection> checkUrl(String url) {
        if (url == null) {
            return reject(Rule.MISSING_FIELD, "url", "is required");
        }
        if (url.length() > MAX_URL_LENGTH) {
            return reject(Rule.VALUE_TOO_LONG, "url", "longer than " + MAX_URL_LENGTH + " characters");
        }
        if (PlainUrls.matches(url)) {
            return Optional.empty();
        }
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            return reject(Rule.INVALID_URL, "url", "not a URL: " + e.getReason());
        }
        if (!uri.isAbsolute()) {
            return reject(Rule.INVALID_URL, "url", "must be absolute (http:// or https://)");
        }
        String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
            return reject(Rule.INVALID_URL, "url", "scheme must be http or https, was " + excerpt(scheme));
        }
        // URI leaves getHost() null for names with '_' (common in container networks), so fall back
        // to the raw authority before deciding there is no host.
        String authority = uri.getRawAuthority();
        if (uri.getHost() == null && (authority == null || authority.isBlank() || authority.startsWith(":"))) {
            return reject(Rule.INVALID_URL, "url", "has no host");
        }
        return Optional.empty();
    }

    /**
     * Returns the host a URL names, without IPv6 brackets, or {@code null} when it names none or is
     * not a URL. Also for names with '_', for which {@code URI.getHost()} is null.
     */
    public static String urlHost(String url) {
        return PlainUrls.matches(url) ? PlainUrls.host(url) : urlHostByUri(url);
    }

    /** {@link #urlHost} by {@code java.net.URI}, for any URL (a plain one is read by hand). */
    static String urlHostByUri(String url) {
        String host;
        try {
            URI uri = new URI(url);
            host = uri.getHost();
            if (host == null && uri.getRawAuthority() != null) {
                String hostPort = uri.getRawAuthority().substring(uri.getRawAuthority().lastIndexOf('@') + 1);
                int colon = hostPort.lastIndexOf(':');
                host = colon > 0 && hostPort.indexOf(']') < colon ? hostPort.substring(0, colon) : hostPort;
            }
        } catch (URISyntaxException e) {
            return null;
        }
        if (host == null || host.isEmpty()) {
            return null;
        }
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }

    /** Returns the broken rule among a heartbeat's fields, or empty when all are valid. */
    static Optional<Rejection> check(String nodeId, String instance, Long seq, String url, NodeState state,
                                     int weight, int intervalMs, String backend, List<String> models,
                                     Load load, List<Gpu> gpus) {
        Optional<Rejection> r = checkNodeId(nodeId, "nodeId");
        if (r.isEmpty()) {
            r = checkUrl(url);
        }
        if (r.isPresent()) {
            return r;
        }
        if (state == null) {
            return reject(Rule.MISSING_FIELD, "state", "is required");
        }
        if (instance != null && (instance.isEmpty() || instance.length() > MAX_TEXT_LENGTH)) {
            return reject(Rule.VALUE_TOO_LONG, "instance", "must be 1 to " + MAX_TEXT_LENGTH + " characters");
        }
        if (seq != null && seq < 0) {
            return reject(Rule.OUT_OF_RANGE, "seq", "must not be negative, was " + seq);
        }
        if (weight < MIN_WEIGHT || weight > MAX_WEIGHT) {
            return reject(Rule.OUT_OF_RANGE, "weight",
                    "must be " + MIN_WEIGHT + " to " + MAX_WEIGHT + ", was " + weight);
        }
        if (intervalMs < MIN_INTERVAL_MS || intervalMs > MAX_INTERVAL_MS) {
            return reject(Rule.OUT_OF_RANGE, "intervalMs",
                    "must be " + MIN_INTERVAL_MS + " to " + MAX_INTERVAL_MS + ", was " + intervalMs);
        }
        if (backend != null && backend.length() > MAX_TEXT_LENGTH) {
            return reject(Rule.VALUE_TOO_LONG, "backend", "longer than " + MAX_TEXT_LENGTH + " characters");
        }
        if (models.size() > MAX_MODELS) {
            return reject(Rule.TOO_MANY_ITEMS, "models",
                    "at most " + MAX_MODELS + " models, was " + models.size());
        }
        for (int i = 0; i < models.size(); i++) {
            String model = models.get(i);
            if (model == null || model.isEmpty()) {
                return reject(Rule.INVALID_VALUE, "models[" + i + "]", "must not be empty");
            }
            if (model.length() > MAX_MODEL_LENGTH) {
                return reject(Rule.VALUE_TOO_LONG, "models[" + i + "]",
                        "longer than " + MAX_MODEL_LENGTH + " characters");
            }
        }
        r = checkLoad(load);
        if (r.isPresent()) {
            return r;
        }
        if (gpus.size() > MAX_GPUS) {
            return reject(Rule.TOO_MANY_ITEMS, "gpus", "at most " + MAX_GPUS + " GPUs, was " + gpus.size());
        }
        for (int i = 0; i < gpus.size(); i++) {
            r = checkGpu(gpus.get(i), "gpus[" + i + "]");
            if (r.isPresent()) {
                return r;
            }
        }
        return Optional.empty();
    }

    /** Models a node may report loaded at once; no server holds more in memory. */
    public static final int MAX_LOADED = 64;
    /** Longest digest, time or details text of a model's description. */
    public static final int MAX_MODEL_TEXT_LENGTH = 100;
    /** Most families a model's details may name. */
    public static final int MAX_FAMILIES = 8;

    /** The largest capacity a heartbeat may state. */
    public static final int MAX_CAPACITY = 100_000;

    /**
     * The largest prefill speed a heartbeat may state, in prompt tokens per second: far above what one
     * server prefills (tens of thousands on the largest GPUs), so a larger figure is a broken reading.
     */
    public static final int MAX_PREFILL_TPS = 10_000_000;

    /** Checks the optional {@code capacity}: absent, or 1 to {@value #MAX_CAPACITY} requests at once. */
    public static Optional<Rejection> checkCapacity(Integer capacity) {
        if (capacity != null && (capacity < 1 || capacity > MAX_CAPACITY)) {
            return reject(Rule.OUT_OF_RANGE, "capacity", "must be 1 to " + MAX_CAPACITY + ", was " + capacity);
        }
        return Optional.empty();
    }

    /**
     * Checks the catalogue fields: at most {@link #MAX_MODELS} described and {@link #MAX_LOADED}
     * loaded models, each named like a model, texts short, sizes not negative.
     */
    public static Optional<Rejection> checkCatalogue(List<ModelInfo> modelInfo, List<LoadedModel> loaded) {
        if (modelInfo.size() > MAX_MODELS) {
            return reject(Rule.TOO_MANY_ITEMS, "modelInfo", "at most " + MAX_MODELS + " models, was " + modelInfo.size());
        }
        for (int i = 0; i < modelInfo.size(); i++) {
            ModelInfo m = modelInfo.get(i);
            String field = "modelInfo[" + i + "]";
            Optional<Rejection> r = checkModelName(m.name(), field + ".name")
                    .or(() -> checkSize(m.size(), field + ".size"))
                    .or(() -> checkText(m.digest(), field + ".digest"))
                    .or(() -> checkText(m.modifiedAt(), field + ".modifiedAt"));
            if (r.isPresent()) {
                return r;
            }
            ModelInfo.Details d = m.details();
            if (d != null) {
                if (d.families().size() > MAX_FAMILIES) {
                    return reject(Rule.TOO_MANY_ITEMS, field + ".details.families", "at most " + MAX_FAMILIES);
                }
                for (String text : Arrays.asList(d.parentModel(), d.format(), d.family(), d.parameterSize(),
                        d.quantizationLevel())) {
                    r = checkText(text, field + ".details");
                    if (r.isPresent()) {
                        return r;
                    }
                }
                for (String family : d.families()) {
                    r = family == null ? reject(Rule.WRONG_TYPE, field + ".details.families", "must be strings")
                            : checkText(family, field + ".details.families");
                    if (r.isPresent()) {
                        return r;
                    }
                }
            }
        }
        if (loaded.size() > MAX_LOADED) {
            return reject(Rule.TOO_MANY_ITEMS, "loaded", "at most " + MAX_LOADED + " models, was " + loaded.size());
        }
        for (int i = 0; i < loaded.size(); i++) {
            LoadedModel m = loaded.get(i);
            String field = "loaded[" + i + "]";
            Optional<Rejection> r = checkModelName(m.name(), field + ".name")
                    .or(() -> checkSize(m.size(), field + ".size"))
                    .or(() -> checkSize(m.sizeVram(), field + ".sizeVram"))
                    .or(() -> checkText(m.expiresAt(), field + ".expiresAt"))
                    .or(() -> m.contextLength() != null && m.contextLength() < 0
                            ? reject(Rule.OUT_OF_RANGE, field + ".contextLength", "must not be negative") : Optional.empty());
            if (r.isPresent()) {
                return r;
            }
        }
        return Optional.empty();
    }

    private static Optional<Rejection> checkModelName(String name, String field) {
        if (name == null || name.isEmpty()) {
            return reject(Rule.MISSING_FIELD, field, "is required");
        }
        if (name.length() > MAX_MODEL_LENGTH) {
            return reject(Rule.VALUE_TOO_LONG, field, "longer than " + MAX_MODEL_LENGTH + " characters");
        }
        return Optional.empty();
    }

    private static Optional<Rejection> checkSize(Long size, String field) {
        return size != null && size < 0 ? reject(Rule.OUT_OF_RANGE, field, "must not be negative, was " + size)
                : Optional.empty();
    }

    private static Optional<Rejection> checkText(String text, String field) {
        return text != null && text.length() > MAX_MODEL_TEXT_LENGTH
                ? reject(Rule.VALUE_TOO_LONG, field, "longer than " + MAX_MODEL_TEXT_LENGTH + " characters")
                : Optional.empty();
    }

    private static Optional<Rejection> checkLoad(Load load) {
        if (load.inFlight() != null && load.inFlight() < 0) {
            return reject(Rule.OUT_OF_RANGE, "load.inFlight", "must not be negative");
        }
        if (load.queued() != null && load.queued() < 0) {
            return reject(Rule.OUT_OF_RANGE, "load.queued", "must not be negative");
        }
        if (load.kvCacheUsage() != null && !isFraction(load.kvCacheUsage())) {
            return reject(Rule.OUT_OF_RANGE, "load.kvCacheUsage", "must be 0 to 1");
        }
        if (load.prefixCacheHitRate() != null && !isFraction(load.prefixCacheHitRate())) {
            return reject(Rule.OUT_OF_RANGE, "load.prefixCacheHitRate", "must be 0 to 1");
        }
        return checkPrefillTps(load.prefillTps(), "load.prefillTps");
    }

    /**
     * Checks a prefill speed, in prompt tokens per second: absent, or finite, above 0 and at most
     * {@value #MAX_PREFILL_TPS}. {@code field} names it in the rejection.
     */
    public static Optional<Rejection> checkPrefillTps(Double tps, String field) {
        if (tps != null && !(tps > 0 && tps <= MAX_PREFILL_TPS)) {
            return reject(Rule.OUT_OF_RANGE, field, "must be above 0 and at most " + MAX_PREFILL_TPS
                    + " prompt tokens per second, was " + tps);
        }
        return Optional.empty();
    }

    private static Optional<Rejection> checkGpu(Gpu gpu, String field) {
        if (gpu == null) {
            return reject(Rule.WRONG_TYPE, field, "must be an object");
        }
        if (gpu.name() != null && gpu.name().length() > MAX_TEXT_LENGTH) {
            return reject(Rule.VALUE_TOO_LONG, field + ".name", "longer than " + MAX_TEXT_LENGTH + " characters");
        }
        if (gpu.utilization() != null && !isFraction(gpu.utilization())) {
            return reject(Rule.OUT_OF_RANGE, field + ".utilization", "must be 0 to 1");
        }
        if (gpu.memoryUsedMiB() != null && gpu.memoryUsedMiB() < 0) {
            return reject(Rule.OUT_OF_RANGE, field + ".memoryUsedMiB", "must not be negative");
        }
        if (gpu.memoryTotalMiB() != null && gpu.memoryTotalMiB() < 0) {
            return reject(Rule.OUT_OF_RANGE, field + ".memoryTotalMiB", "must not be negative");
        }
        return Optional.empty();
    }

    private static boolean isFraction(double value) {
        return value >= 0.0 && value <= 1.0;
    }

    private static Optional<Rejection> reject(Rule rule, String field, String detail) {
        return Optional.of(new Rejection(rule, field, detail));
    }

    /** Returns at most the first 40 characters of a value, for error messages. */
    static String excerpt(String value) {
        return value.length() <= 40 ? value : value.substring(0, 40) + "...";
    }
}
