package io.heartgate.scheduler.config;

import io.heartgate.protocol.InvalidSettingException;
import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Says whether the scheduler sends traces of its proxied requests over OTLP, and where: on with
 * {@code --otlp-endpoint} or with the standard OpenTelemetry variables
 * ({@code OTEL_EXPORTER_OTLP_ENDPOINT}, {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}, or
 * {@code OTEL_TRACES_EXPORTER=otlp}), off otherwise and with {@code OTEL_SDK_DISABLED=true}. Every
 * other {@code OTEL_*} variable (headers, protocol, timeout, certificates, resource, batch sizes,
 * sampler) means what the OpenTelemetry SDK documents; the flags win over the variables. Validated
 * on construction.
 *
 * @param endpoint the OTLP/HTTP base URL ({@code --otlp-endpoint}; traces go to its
 *     {@code /v1/traces}), or {@code null}
 * @param sampleRatio the share of new traces kept ({@code --trace-sample-ratio}, 0 to 1; a request
 *     whose caller's trace was sampled is always kept), or {@code null}: the variables' sampler, or all
 * @param environment the process's {@code OTEL_*} variables (others are ignored)
 */
public record TracingConfig(String endpoint, Double sampleRatio, Map<String, String> environment) {

    /** Tracing off, whatever the environment says. */
    public static final TracingConfig OFF = new TracingConfig(null, null, Map.of("OTEL_SDK_DISABLED", "true"));

    /**
     * Checks the flags, and, when traces are on, the variables that choose the exporter and its
     * protocol; a bad value throws {@link InvalidSettingException}. Off, no {@code OTEL_*} variable
     * is judged: what other programs in the same environment are told is none of the scheduler's business.
     */
    public TracingConfig {
        if (endpoint != null && endpoint.isBlank()) {
            endpoint = null;
        }
        if (endpoint != null) {
            URI uri;
            try {
                uri = URI.create(endpoint);
            } catch (IllegalArgumentException e) {
                throw new InvalidSettingException("otlpEndpoint", "must be an http or https URL, was '" + endpoint + "'");
            }
            if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
                throw new InvalidSettingException("otlpEndpoint", "must be an http or https URL, was '" + endpoint + "'");
            }
        }
        if (sampleRatio != null && !(sampleRatio >= 0 && sampleRatio <= 1)) {
            throw new InvalidSettingException("traceSampleRatio", "must be 0 to 1, was " + sampleRatio);
        }
        Map<String, String> otel = new TreeMap<>();
        if (environment != null) {
            environment.forEach((k, v) -> {
                if (k.startsWith("OTEL_") && v != null) {
                    otel.put(k, v);
                }
            });
        }
        environment = Map.copyOf(otel);
        if (on(endpoint, environment)) {
            String exporter = environment.getOrDefault("OTEL_TRACES_EXPORTER", "otlp").trim().toLowerCase(Locale.ROOT);
            if (!exporter.equals("otlp")) {
                throw new InvalidSettingException("OTEL_TRACES_EXPORTER", "must be otlp (the one exporter built in), "
                        + "was '" + exporter + "'");
            }
            String name = environment.containsKey("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
            String protocol = environment.getOrDefault(name, "http/protobuf").trim();
            if (!protocol.equals("http/protobuf")) {
                throw new InvalidSettingException(name, "must be http/protobuf (no gRPC client is built in), was '"
                        + protocol + "'");
            }
        }
    }

    /** Says whether traces are sent. */
    public boolean on() {
        return on(endpoint, environment);
    }

    private static boolean on(String endpoint, Map<String, String> environment) {
        if ("true".equalsIgnoreCase(environment.getOrDefault("OTEL_SDK_DISABLED", "").trim())
                || "none".equalsIgnoreCase(environment.getOrDefault("OTEL_TRACES_EXPORTER", "").trim())) {
            return false;
        }
        return endpoint != null || environment.containsKey("OTEL_EXPORTER_OTLP_ENDPOINT")
                || environment.containsKey("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                || environment.containsKey("OTEL_TRACES_EXPORTER");
    }

    /**
     * Returns the SDK's settings, as its property names: the scheduler's defaults (service name
     * {@code heartgate-scheduler}, traces only: no metrics or logs exported), then the variables,
     * then the flags.
     */
    public Map<String, String> properties() {
        Map<String, String> p = new TreeMap<>();
        p.put("otel.service.name", "heartgate-scheduler");
        p.put("otel.traces.exporter", "otlp");
        p.put("otel.metrics.exporter", "none");
        p.put("otel.logs.exporter", "none");
        p.put("otel.exporter.otlp.protocol", "http/protobuf");
        environment.forEach((k, v) -> p.put(k.toLowerCase(Locale.ROOT).replace('_', '.'), v));
        p.put("otel.metrics.exporter", "none");
        p.put("otel.logs.exporter", "none");
        if (endpoint != null) { // the flag wins over both variables
            p.put("otel.exporter.otlp.endpoint", endpoint);
            p.put("otel.exporter.otlp.traces.endpoint", tracesUrl(endpoint));
        }
        if (sampleRatio != null) {
            p.put("otel.traces.sampler", "parentbased_traceidratio");
            p.put("otel.traces.sampler.arg", Double.toString(sampleRatio));
        }
        return p;
    }

    /** Returns where OTLP/HTTP takes traces under the base URL {@code base}, as the SDK appends it. */
    private static String tracesUrl(String base) {
        return (base.endsWith("/") ? base : base + "/") + "v1/traces";
    }

    /** Returns where traces go and which share is kept, for the start-up log. */
    public String summary() {
        Map<String, String> p = properties();
        String to = p.getOrDefault("otel.exporter.otlp.traces.endpoint",
                tracesUrl(p.getOrDefault("otel.exporter.otlp.endpoint", "http://localhost:4318")));
        String sampler = p.getOrDefault("otel.traces.sampler", "parentbased_always_on");
        String arg = sampler.contains("ratio") ? p.get("otel.traces.sampler.arg") : null;
        return "OTLP/" + p.get("otel.exporter.otlp.protocol") + " to " + to + ", sampler " + sampler
                + (arg != null ? " " + arg : "") + ", service " + p.get("otel.service.name");
    }
}
