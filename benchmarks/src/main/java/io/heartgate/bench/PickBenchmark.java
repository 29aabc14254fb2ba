package io.heartgate.bench;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.NodeTable;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/** Measures one pick per strategy over the candidates of a real table snapshot. */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class PickBenchmark {

    @Param({"random", "round-robin", "weighted", "least-connections", "least-loaded"})
    public String strategy;

    @Param({"10", "100", "10000"})
    public int nodes;

    private Balancer balancer;
    private List<Node> candidates;

    @Setup
    public void setUp() {
        Random random = new Random(7);
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
        candidates = table.snapshot().candidates("llama3:8b");
        for (Node n : candidates) {
            for (int k = random.nextInt(3); k > 0; k--) {
                n.inFlight().increment();
            }
        }
        balancer = Strategy.parse(strategy).create();
    }

    @Benchmark
    public Node pick() {
        return balancer.pick(candidates).orElseThrow();
    }
}
