package io.heartgate.bench;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.NodeTable;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Random;

/** The fleet the pick benchmarks share: a real table's candidates, weights 1 to 5, random reported load. */
final class BenchFleet {

    private BenchFleet() {
    }

    /** Returns the candidates for {@code llama3:8b} of a snapshot of {@code nodes} nodes drawn from {@code random}. */
    static List<Node> candidates(int nodes, Random random) {
        NodeTable table = new NodeTable(Clock.systemUTC(), 3, Duration.ZERO);
        for (int i = 0; i < nodes; i++) {
            String id = String.format("gpu-%05d", i);
            Heartbeat hb = Heartbeat.builder(id, "http://10.0." + (i / 250) + "." + (i % 250) + ":11434")
                    .instance("i").seq(1L).weight(1 + random.nextInt(5)).intervalMs(1000)
                    .models(List.of("llama3:8b"))
                    .load(new Load(random.nextInt(8), random.nextInt(4), random.nextDouble()))
                    .build();
            table.apply(hb, Instant.now());
        }
        table.publish();
        return table.snapshot().candidates("llama3:8b");
    }

    /** Puts 0 to 2 of this scheduler's requests in flight on each node. */
    static void busy(List<Node> candidates, Random random) {
        for (Node n : candidates) {
            for (int k = random.nextInt(3); k > 0; k--) {
                n.inFlight().increment();
            }
        }
    }
}
