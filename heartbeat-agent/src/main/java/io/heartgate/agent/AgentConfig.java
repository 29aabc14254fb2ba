package io.heartgate.agent;

import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.HeartbeatRules;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Configures one agent; validated on construction so a bad value fails at start with one clear line.
 *
 * @param kafka bootstrap servers, or {@code null} (allowed only with {@code once})
 * @param topic heartbeat topic
 * @param nodeId the node's id
 * @param url the inference server's URL as the scheduler must reach it
 * @param probeUrl where the agent itself reaches the server
 * @param backend how to read health, models and load
 * @param weight relative capacity, 1 to 1000
 * @param models advertised models overriding the probed ones, or {@code null} to probe
 * @param interval heartbeat interval, 100 ms to 60 s
 * @param probeTimeout per-request timeout of probes (the effective one is at most the interval)
 * @param gpuInterval how often nvidia-smi runs
 * @param nvidiaSmi the nvidia-smi executable
 * @param drain start in DRAINING state
 * @param once print one heartbeat and exit
 * @param kafkaClient the operator's Kafka client properties (TLS, SASL); {@link KafkaSettings#NONE} for none
 * @param signingKeys the keys heartbeats are signed with (the first one signs), or {@code null} to send unsigned
 * @param capacity requests the server generates at once, stated by the operator ({@code --capacity}), or
 *     {@code null} to report what the server says (TGI, llama.cpp) or nothing
 * @param prefillTps prompt tokens the server prefills per second, stated by the operator ({@code
 *     --prefill-tps}): every heartbeat reports it, whatever the server's metrics say; or {@code null} to
 *     report what they measure (llama.cpp) or nothing
 */
public record AgentConfig(String kafka, String topic, String nodeId, String url, String probeUrl, Backend backend,
                          int weight, List<String> models, Duration interval, Duration probeTimeout,
                          Duration gpuInterval, String nvidiaSmi, boolean drain, boolean once,
                          KafkaSettings kafkaClient, HeartbeatKeys signingKeys, Integer capacity,
                          Double prefillTps) {

    /** An agent that reports the prefill speed its server's metrics give, if any. */
    public AgentConfig(String kafka, String topic, String nodeId, String url, String probeUrl, Backend backend,
                       int weight, List<String> models, Duration interval, Duration probeTimeout,
                       Duration gpuInterval, String nvidiaSmi, boolean drain, boolean once,
                       KafkaSettings kafkaClient, HeartbeatKeys signingKeys, Integer capacity) {
        this(kafka, topic, nodeId, url, probeUrl, backend, weight, models, interval, probeTimeout, gpuInterval, nvidiaSmi,
                drain, once, kafkaClient, signingKeys, capacity, null);
    }

    /** An agent that reports the capacity its server states, if any. */
    public AgentConfig(String kafka, String topic, String nodeId, String url, String probeUrl, Backend backend,
                       int weight, List<String> models, Duration interval, Duration probeTimeout,
                       Duration gpuInterval, String nvidiaSmi, boolean drain, boolean once,
                       KafkaSettings kafkaClient, HeartbeatKeys signingKeys) {
        this(kafka, topic, nodeId, url, probeUrl, backend, weight, models, interval, probeTimeout, gpuInterval, nvidiaSmi,
                drain, once, kafkaClient, signingKeys, null);
    }

    /** An agent on an open broker that sends unsigned heartbeats. */
    public AgentConfig(String kafka, String topic, String nodeId, String url, String probeUrl, Backend backend,
                       int weight, List<String> models, Duration interval, Duration probeTimeout,
                       Duration gpuInterval, String nvidiaSmi, boolean drain, boolean once) {
        this(kafka, topic, nodeId, url, probeUrl, backend, weight, models, interval, probeTimeout, gpuInterval, nvidiaSmi,
                drain, once, KafkaSettings.NONE, null);
    }

    /** Validates every field; a bad value throws {@link InvalidSettingException} naming its component. */
    public AgentConfig {
        if (!once && (kafka == null || kafka.isBlank())) {
            throw new InvalidSettingException("kafka", "is required");
        }
        if (topic == null || !topic.matches("[A-Za-z0-9._-]{1,249}")) {
            throw new InvalidSettingException("topic", "must be 1 to 249 of A-Za-z0-9._-, was '" + topic + "'");
        }
        if (!HeartbeatRules.isValidNodeId(nodeId)) {
            throw new InvalidSettingException("nodeId", "must be 1 to 128 of A-Za-z0-9._:-, was '" + nodeId + "'");
        }
        if (url == null) {
            throw new InvalidSettingException("url", "is required");
        }
        HeartbeatRules.checkUrl(url).ifPresent(r -> {
            throw new InvalidSettingException("url", r.detail() + ": '" + url + "'");
        });
        if (probeUrl == null) {
            probeUrl = url;
        }
        String probe = probeUrl;
        HeartbeatRules.checkUrl(probe).ifPresent(r -> {
            throw new InvalidSettingException("probeUrl", r.detail() + ": '" + probe + "'");
        });
        Objects.requireNonNull(backend, "backend");
        if (weight < HeartbeatRules.MIN_WEIGHT || weight > HeartbeatRules.MAX_WEIGHT) {
            throw new InvalidSettingException("weight", "must be 1 to 1000, was " + weight);
        }
        if (models != null) {
            models = List.copyOf(models);
            if (models.isEmpty() || models.size() > HeartbeatRules.MAX_MODELS
                    || models.stream().anyMatch(m -> m.isBlank() || m.length() > HeartbeatRules.MAX_MODEL_LENGTH)) {
                throw new InvalidSettingException("models", "must list 1 to 1024 names of 1 to 256 characters, comma-separated");
            }
        }
        Objects.requireNonNull(interval, "interval");
        if (interval.toMillis() < HeartbeatRules.MIN_INTERVAL_MS || interval.toMillis() > HeartbeatRules.MAX_INTERVAL_MS) {
            throw new InvalidSettingException("interval", "must be 100ms to 60s, was " + interval.toMillis() + "ms");
        }
        if (probeTimeout.toMillis() < 10 || probeTimeout.toSeconds() > 60) {
            throw new InvalidSettingException("probeTimeout", "must be 10ms to 60s");
        }
        if (gpuInterval.toMillis() < 100 || gpuInterval.toMinutes() > 10) {
            throw new InvalidSettingException("gpuInterval", "must be 100ms to 10m");
        }
        Objects.requireNonNull(nvidiaSmi, "nvidiaSmi");
        if (kafkaClient == null) {
            kafkaClient = KafkaSettings.NONE;
        }
        HeartbeatRules.checkCapacity(capacity).ifPresent(r -> {
            throw new InvalidSettingException("capacity", r.detail());
        });
        HeartbeatRules.checkPrefillTps(prefillTps, "prefillTps").ifPresent(r -> {
            throw new InvalidSettingException("prefillTps", r.detail());
        });
    }

    /** Returns the probe timeout in force: the configured one, but never longer than the interval. */
    public Duration effectiveProbeTimeout() {
        return probeTimeout.compareTo(interval) < 0 ? probeTimeout : interval;
    }
}
