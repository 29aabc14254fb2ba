package io.heartgate.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.agent.probe.Backend;
import io.heartgate.embedded.EmbeddedKafkaBroker;
import io.heartgate.embedded.EmbeddedKafkaConfig;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Stops a real broker for 10 s under a running agent. Uses a broker of its own (not the shared
 * fixture) because it stops it; the same embedded broker runs with or without Docker.
 */
class KafkaOutageIT {

    private static final Duration INTERVAL = Duration.ofMillis(500);

    @Test
    void agentRidesOutAKafkaOutageAndResumesWithoutABurst(@TempDir Path dataDir) throws Exception {
        EmbeddedKafkaConfig brokerConfig = EmbeddedKafkaConfig.forTests().withDataDir(dataDir);
        EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start(brokerConfig);
        Vertx vertx = Vertx.vertx();
        SimServer sim = new SimServer(new SimConfigBuilder("sim-k", List.of("m")).build(), Clock.systemUTC(), System::nanoTime);
        vertx.deployVerticle(sim).await(20, TimeUnit.SECONDS);
        String url = "http://127.0.0.1:" + sim.port();
        AgentRuntime agent = null;
        HeartbeatTail tail = null;
        try {
            tail = new HeartbeatTail(broker.bootstrapServers(), "outage");
            agent = AgentRuntime.start(new AgentConfig(broker.bootstrapServers(), "outage", "gpu-o", url, url,
                    Backend.OLLAMA, 1, null, INTERVAL, Duration.ofSeconds(1), Duration.ofSeconds(5),
                    "/nonexistent/nvidia-smi", false, false), Clock.systemUTC());
            tail.awaitCount(3, Duration.ofSeconds(20));
            long lastOffsetBefore = tail.seen().get(tail.seen().size() - 1).offset();

            broker.close();
            AgentRuntime running = agent;
            await().during(Duration.ofSeconds(10)).atMost(Duration.ofSeconds(12))
                    .until(running::isRunning);
            assertThat(agent.publisher().failedCount()).as("sends failed while Kafka was down").isPositive();
            assertThat(agent.publisher().kafkaReachable()).isFalse();

            broker = EmbeddedKafkaBroker.start(brokerConfig.withPort(broker.port()));
            Instant back = Instant.now();

            HeartbeatTail.Seen resumed = tail.awaitMatching(0,
                    s -> s.offset() > lastOffsetBefore
                            && s.beat().map(b -> !b.sentAt().isBefore(back)).orElse(false),
                    Duration.ofSeconds(20));
            Duration gap = Duration.between(back, resumed.beat().orElseThrow().sentAt());
            System.out.printf("[heartgate-test] first fresh heartbeat %d ms after the broker returned%n", gap.toMillis());
            assertThat(gap).isLessThanOrEqualTo(INTERVAL.multipliedBy(2));

            // Every record written during or after the outage: at most one was built before the broker returned.
            long stale = tail.seen().stream()
                    .filter(s -> s.offset() > lastOffsetBefore)
                    .map(s -> s.beat().orElseThrow())
                    .map(Heartbeat::sentAt)
                    .filter(sentAt -> sentAt.isBefore(back))
                    .count();
            assertThat(stale).isLessThanOrEqualTo(1);
            await().atMost(Duration.ofSeconds(5)).until(running.publisher()::kafkaReachable);
        } finally {
            if (agent != null) {
                agent.close();
            }
            if (tail != null) {
                tail.close();
            }
            broker.close();
            vertx.close().await(10, TimeUnit.SECONDS);
        }
    }
}
