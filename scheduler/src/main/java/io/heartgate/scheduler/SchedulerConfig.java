package io.heartgate.scheduler;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.ResilienceConfig;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.config.TracingConfig;
import io.heartgate.scheduler.proxy.ProxyConfig;
import io.heartgate.scheduler.routing.WarmFirst;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Configures one scheduler replica; validated on construction, so a bad value fails at start and
 * names the setting (the command line turns that into the flag).
 *
 * @param kafka bootstrap servers, or {@code null} to start the embedded broker
 * @param embeddedKafkaPort port of the embedded broker (0 = any free port)
 * @param embeddedKafkaHost address the embedded broker listens on and advertises
 * @param dataDir where the embedded broker keeps its log, or {@code null} for a temp dir
 * @param topic heartbeat topic
 * @param topicPartitions partitions of the topic when the scheduler creates it
 * @param bind address for both HTTP ports
 * @param adminPort admin port (0 = any free port)
 * @param strategy balancing strategy
 * @param missedHeartbeats a node expires after this many of its own intervals without a heartbeat
 * @param proxy the proxy's port, retries, limits and timeouts
 * @param demoNodes simulated nodes to start with their agents (0 = none)
 * @param lookBack how far back discovery reads at start
 * @param security keys, tokens and certificates; {@link SecurityConfig#NONE} for none
 * @param resilience flap damping and the like
 * @param warmFirst whether and how far requests prefer nodes holding their model in memory
 * @param affinity the affinity strategy's key sources, load factor and fallback
 * @param eventsTopic the topic replicas share usage, node health, sessions and their own heartbeats through
 * @param tracing whether and where traces of proxied requests go ({@link TracingConfig#OFF} for none)
 */
public record SchedulerConfig(String kafka, int embeddedKafkaPort, String embeddedKafkaHost, Path dataDir,
                              String topic, int topicPartitions, String bind, int adminPort,
                              Strategy strategy, int missedHeartbeats, ProxyConfig proxy, int demoNodes,
                              Duration lookBack, SecurityConfig security,
                              ResilienceConfig resilience, WarmFirst warmFirst, AffinityConfig affinity,
                              String eventsTopic, TracingConfig tracing) {

    /** Validates every field; a bad value throws {@link InvalidSettingException} naming its component. */
    public SchedulerConfig {
        if (kafka != null && kafka.isBlank()) {
            kafka = null;
        }
        port("embeddedKafkaPort", embeddedKafkaPort);
        port("adminPort", adminPort);
        Objects.requireNonNull(embeddedKafkaHost, "embeddedKafkaHost");
        if (topic == null || !topic.matches("[A-Za-z0-9._-]{1,249}")) {
            throw new InvalidSettingException("topic", "must be 1 to 249 of A-Za-z0-9._-, was '" + topic + "'");
        }
        if (eventsTopic == null || !eventsTopic.matches("[A-Za-z0-9._-]{1,249}")) {
            throw new InvalidSettingException("eventsTopic", "must be 1 to 249 of A-Za-z0-9._-, was '" + eventsTopic + "'");
        }
        Objects.requireNonNull(tracing, "tracing");
        if (eventsTopic.equals(topic)) {
            throw new InvalidSettingException("eventsTopic", "must differ from the heartbeat topic " + topic);
        }
        if (topicPartitions < 1 || topicPartitions > 1000) {
            throw new InvalidSettingException("topicPartitions", "must be 1 to 1000, was " + topicPartitions);
        }
        if (bind == null || bind.isBlank()) {
            throw new InvalidSettingException("bind", "must be an address, such as 0.0.0.0 or 127.0.0.1");
        }
        Objects.requireNonNull(strategy, "strategy");
        if (missedHeartbeats < 1 || missedHeartbeats > 100) {
            throw new InvalidSettingException("missedHeartbeats", "must be 1 to 100, was " + missedHeartbeats);
        }
        Objects.requireNonNull(proxy, "proxy");
        if (demoNodes < 0 || demoNodes > 32) {
            throw new InvalidSettingException("demoNodes", "must be 0 to 32, was " + demoNodes);
        }
        if (lookBack == null || lookBack.isNegative() || lookBack.isZero()) {
            throw new InvalidSettingException("lookBack", "must be positive");
        }
        Objects.requireNonNull(security, "security");
        Objects.requireNonNull(resilience, "resilience");
        Objects.requireNonNull(warmFirst, "warmFirst");
        Objects.requireNonNull(affinity, "affinity");
    }

    private static void port(String setting, int value) {
        if (value < 0 || value > 65535) {
            throw new InvalidSettingException(setting, "must be 0 to 65535, was " + value);
        }
    }
}
