package io.heartgate.bench;

import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.balancer.Picker;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.table.Node;
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

/** Measures one pick per strategy over the candidates of a real table snapshot, some nodes free or none. */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class PickBenchmark {

    @Param({"random", "round-robin", "weighted", "least-connections", "least-loaded"})
    public String strategy;

    @Param({"10", "100", "10000", "100000"})
    public int nodes;

    /** {@code mixed}: 0 to 2 requests in flight a node; {@code busy}: 1 to 3, so no node is free (a scan's worst case). */
    @Param({"mixed", "busy"})
    public String load;

    private Balancer balancer;
    private Picker picker;
    private List<Node> candidates;

    @Setup
    public void setUp() {
        Random random = new Random(7);
        candidates = BenchFleet.candidates(nodes, random);
        BenchFleet.busy(candidates, random);
        if (load.equals("busy")) {
            candidates.forEach(n -> n.inFlight().increment());
        }
        balancer = Strategy.parse(strategy).create();
        picker = balancer.over(candidates); // once per snapshot and model, as routing does
    }

    /** A pick over a model's whole list: the snapshot's picker. */
    @Benchmark
    public Node pick() {
        return picker.pick(candidates);
    }

    /** A pick among a list made for one request (nodes not tried, not ejected, warm): no state for it. */
    @Benchmark
    public Node pickAmongRequestList() {
        return balancer.pick(candidates).orElseThrow();
    }
}
