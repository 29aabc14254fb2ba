package io.heartgate.scheduler.config;

import io.heartgate.scheduler.AffinityConfig;
import io.heartgate.scheduler.SchedulerConfig;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.routing.WarmFirst;
import java.time.Duration;
import java.util.function.Consumer;

/** Builds scheduler configurations for tests: loopback, free ports, the given Kafka and topic. */
public final class SchedulerConfigBuilder {

    private final String kafka;
    private final String topic;
    private String bind = "127.0.0.1";
    private Strategy strategy = Strategy.WEIGHTED;
    private int missedHeartbeats = 3;
    private int demoNodes;
    private final ProxyConfigBuilder proxy = new ProxyConfigBuilder();
    private SecurityConfig security = SecurityConfig.NONE;
    private ResilienceConfig resilience = ResilienceConfig.DEFAULTS;
    private WarmFirst warmFirst = new WarmFirst(true, 4);
    private AffinityConfig affinity = AffinityConfig.DEFAULTS;
    private String eventsTopic;
    private TracingConfig tracing = TracingConfig.OFF;

    public SchedulerConfigBuilder(String kafka, String topic) {
        this.kafka = kafka;
        this.topic = topic;
        this.eventsTopic = topic + "-events"; // replicas of one test share it; other tests' stay apart
    }

    public SchedulerConfigBuilder tracing(TracingConfig config) {
        this.tracing = config;
        return this;
    }

    public SchedulerConfigBuilder eventsTopic(String name) {
        this.eventsTopic = name;
        return this;
    }

    public SchedulerConfigBuilder bind(String address) {
        this.bind = address;
        return this;
    }

    public SchedulerConfigBuilder strategy(Strategy s) {
        this.strategy = s;
        return this;
    }

    public SchedulerConfigBuilder missedHeartbeats(int n) {
        this.missedHeartbeats = n;
        return this;
    }

    public SchedulerConfigBuilder demoNodes(int n) {
        this.demoNodes = n;
        return this;
    }

    /** Sets proxy settings on the proxy's own builder. */
    public SchedulerConfigBuilder proxy(Consumer<ProxyConfigBuilder> settings) {
        settings.accept(proxy);
        return this;
    }

    public SchedulerConfigBuilder security(SecurityConfig s) {
        this.security = s;
        return this;
    }

    /** Sets warm-first; on with a cap of 4 by default, as the command line has it. */
    public SchedulerConfigBuilder warmFirst(WarmFirst w) {
        this.warmFirst = w;
        return this;
    }

    public SchedulerConfigBuilder affinity(AffinityConfig a) {
        this.affinity = a;
        return this;
    }

    public SchedulerConfigBuilder resilience(ResilienceConfig r) {
        this.resilience = r;
        return this;
    }

    public SchedulerConfig build() {
        return new SchedulerConfig(kafka, 0, "127.0.0.1", null, topic, 1, bind, 0, strategy, missedHeartbeats,
                proxy.build(), demoNodes, Duration.ofMinutes(3), security, resilience, warmFirst, affinity, eventsTopic,
                tracing);
    }
}
