package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.sim.Faults;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A node whose inference hangs while its health checks and heartbeats stay fine (the sim's
 * {@code hang} fault: requests are accepted and never answered), under a streaming load: with a 2 s
 * {@code --stall-timeout} it is ejected as stalled and every request waiting on it completes on the
 * other node within the stall timeout, a check (1 s) and its own service time; none fails.
 */
@ExtendWith(KafkaExtension.class)
class StallIT {

    private static final long STALL_MS = 2000;
    private static final long CHECK_MS = 1000;
    /** The longest a request takes on a healthy node here (100 ms to the first token, 8 x 20 ms), with room. */
    private static final long SERVICE_MS = 1000;

    private Cluster cluster;
    private ChatLoad load;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        cluster = new Cluster(kafka.bootstrapServers());
        for (String id : List.of("gpu-a", "gpu-b")) {
            Cluster.SimNode n = cluster.sim(id, c -> c.timing(8, Duration.ofMillis(20), Duration.ofMillis(100))
                    .concurrency(64, 256));
            cluster.heartbeat(id, n.url(), b -> b.models(List.of("llama3:8b")));
        }
        cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN)
                .proxy(p -> p.stallTimeout(Duration.ofMillis(STALL_MS))));
        cluster.awaitRoutable(2);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (load != null) {
            load.close();
        }
        cluster.close();
    }

    @Test
    void requestsWaitingOnANodeThatStopsAnsweringMoveOnceItIsStalled() throws Exception {
        load = new ChatLoad(cluster, 8, true); // streams: a wait for the first token is evidence
        await().atMost(Duration.ofSeconds(30)).conditionEvaluationListener(c -> {
            if (c.getRemainingTimeInMS() <= 0) {
                System.out.println("[stall-it] load before the hang: " + load.summary());
            }
        }).until(() -> load.servedBy("gpu-a") >= 10 && load.servedBy("gpu-b") >= 10);

        long hung = System.nanoTime();
        cluster.faults("gpu-a", new Faults(false, 0, true, -1, null, null));
        long deadlineMs = STALL_MS + CHECK_MS + 200; // + a sweep and the check's own lag
        long deadline = hung + TimeUnit.MILLISECONDS.toNanos(deadlineMs);
        await().atMost(Duration.ofSeconds(20)).until(() -> load.startedAfter(deadline) >= 20);
        load.stop();

        load.printFailures("stall-it", hung);
        assertThat(load.results()).as("failed requests").allSatisfy(r -> assertThat(r.status()).isEqualTo(200));
        for (ChatLoad.Result r : load.results()) {
            if (r.endNanos() > hung && r.startNanos() < deadline) {
                long endMs = TimeUnit.NANOSECONDS.toMillis(r.endNanos() - hung);
                long latestMs = Math.max(deadlineMs, TimeUnit.NANOSECONDS.toMillis(r.startNanos() - hung)) + SERVICE_MS;
                assertThat(endMs).as("a request in flight during the hang ended %d ms after it", endMs)
                        .isLessThanOrEqualTo(latestMs);
            }
        }
        assertThat(cluster.scheduler.health().stallCount()).isEqualTo(1);
        assertThat(cluster.scheduler.health().isEjected("gpu-a")).isTrue();
        assertThat(cluster.scheduler.table().snapshot().node("gpu-a").state()).as("its heartbeats still say UP")
                .isEqualTo(NodeState.UP);
        assertThat(cluster.scheduler.proxyCounters().get(Counter.RESCUED)).as("requests moved off the stalled node")
                .isPositive();
    }
}
