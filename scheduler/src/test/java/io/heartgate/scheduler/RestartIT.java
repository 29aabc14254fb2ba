package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.NodeState;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.scheduler.config.SchedulerConfigBuilder;
import io.heartgate.scheduler.discovery.RestartPoint;
import io.heartgate.scheduler.replicas.GatewayEvents;
import io.heartgate.scheduler.table.Node;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A replica started beside a running one reads the heartbeat topic from the restart point the
 * running one writes, not from the whole look-back, and still lists exactly the live nodes: those
 * beating every half second, one with a long interval whose only heartbeat is far older than the
 * short nodes' expiry, and not one that stopped; and it holds out a node the running one holds for
 * flapping, though the flaps lie before where it began to read.
 */
@ExtendWith(KafkaExtension.class)
class RestartIT {

    private Cluster cluster;
    private final List<Scheduler> replicas = new ArrayList<>();

    @BeforeEach
    void setUp(TestKafka kafka) {
        cluster = new Cluster(kafka.bootstrapServers());
    }

    @AfterEach
    void tearDown() throws Exception {
        for (Scheduler s : replicas) {
            s.close();
        }
        cluster.close();
    }

    private Scheduler replica() {
        SchedulerConfigBuilder b = new SchedulerConfigBuilder(cluster.bootstrap, cluster.topic);
        Scheduler s = Scheduler.start(b.build(), Clock.systemUTC());
        replicas.add(s);
        return s;
    }

    private static List<String> listed(Scheduler s) {
        return s.table().snapshot().nodes().stream().map(Node::id).toList();
    }

    /** Returns the newest restart point on the replicas' events topic, as a starting replica reads it. */
    private Optional<RestartPoint> point() {
        return new GatewayEvents("probe-0000", cluster.topic + "-events", cluster.bootstrap, KafkaSettings.NONE, null,
                Clock.systemUTC()).restartPoint();
    }

    /** Returns the admin port's view of node {@code id} on {@code s}. */
    private static JsonObject adminNode(Scheduler s, String id) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
                "http://127.0.0.1:" + s.adminPort() + "/admin/nodes?prefix=" + id + "&limit=1")).build(),
                HttpResponse.BodyHandlers.ofString());
        JsonArray nodes = new JsonObject(r.body()).getJsonArray("nodes");
        return nodes.isEmpty() ? new JsonObject() : nodes.getJsonObject(0);
    }

    @Test
    void aReplicaStartedAfterANodesFlapsHoldsItAsTheOthersDo() throws Exception {
        cluster.heartbeat("steady", "http://127.0.0.1:1", b -> b);
        Scheduler first = replica();
        // Five changes within the default window of 60 s, each seen by the first replica: it holds the node.
        NodeState[] states = {NodeState.UP, NodeState.DOWN, NodeState.UP, NodeState.DOWN, NodeState.UP};
        for (NodeState state : states) {
            cluster.heartbeat("flappy", "http://127.0.0.1:1", b -> b.state(state));
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> first.table().snapshot().nodes().stream()
                    .anyMatch(n -> n.id().equals("flappy") && n.state() == state));
        }
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> adminNode(first, "flappy")
                .getString("notRoutableReason", "").startsWith("held: flapping"));
        long flapped = System.currentTimeMillis();

        // The restart point moves past the flaps: a replica starting now reads none of them.
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500))
                .until(() -> point().map(p -> p.at().toEpochMilli() > flapped + 3_000).orElse(false));
        Scheduler second = replica();
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> second.discoveryStatus().caughtUp());
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> adminNode(second, "flappy")
                .getString("notRoutableReason", "").matches("held: flapping: .* \\(by replica .+\\)"));
        assertThat(adminNode(second, "flappy").getBoolean("routable")).isFalse();
        assertThat(adminNode(second, "steady").getBoolean("routable")).isTrue();
    }

    @Test
    void aStartingReplicaReadsFromTheRestartPointAndListsExactlyTheLiveNodes() throws Exception {
        cluster.heartbeat("gone", "http://127.0.0.1:1", b -> b);
        for (String id : List.of("a", "b", "c")) {
            cluster.heartbeat(id, "http://127.0.0.1:1", b -> b);
        }
        Scheduler first = replica();
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> listed(first).size() == 4);
        cluster.stopHeartbeats("gone");
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> listed(first).equals(List.of("a", "b", "c")));

        // Seconds of heartbeats go by; the running replica notes the nodes' longest interval (500 ms).
        AtomicReference<RestartPoint> written = new AtomicReference<>();
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500)).until(() -> {
            written.set(point().orElse(null));
            return written.get() != null && written.get().longestNodeIntervalMs() == Cluster.INTERVAL_MS
                    && first.stats().receivedCount() >= 60;
        });

        Scheduler second = replica();
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> second.discoveryStatus().caughtUp());
        assertThat(listed(second)).as("the live nodes, and not the one that stopped").containsExactly("a", "b", "c");
        assertThat(second.stats().receivedCount()).as("records read at start: the last seconds only, not all %d",
                first.stats().receivedCount()).isLessThan(first.stats().receivedCount() / 2);

        // A node beating once a minute: its one heartbeat soon lies further back than a short window.
        cluster.sendRaw(new ProducerRecord<>(cluster.topic, "slow".getBytes(StandardCharsets.UTF_8),
                cluster.encoded("slow", "http://127.0.0.1:1", b -> b.intervalMs(60_000).state(NodeState.UP))));
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500))
                .until(() -> point().map(p -> p.longestNodeIntervalMs() == 60_000).orElse(false));
        long sentBefore = first.stats().receivedCount();
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> first.stats().receivedCount() >= sentBefore + 30);

        Scheduler third = replica();
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> third.discoveryStatus().caughtUp());
        assertThat(listed(third)).as("the slow node is alive: the window reached back to it")
                .containsExactly("a", "b", "c", "slow");
    }
}
