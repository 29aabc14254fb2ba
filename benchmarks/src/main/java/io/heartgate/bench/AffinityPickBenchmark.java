package io.heartgate.bench;

import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.balancer.AffinityBalancer;
import io.heartgate.scheduler.balancer.HashRing;
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

/**
 * Measures one keyed pick of the affinity strategy over the candidates of a real table snapshot
 * (weights 1 to 5), a different key each time. {@code idle}: nothing in flight, so no pick needs
 * the load bound; {@code busy}: 0 to 2 requests in flight per node, so most picks sum every
 * candidate's count for the bound.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class AffinityPickBenchmark {

    @Param({"10", "100", "10000"})
    public int nodes;

    @Param({"idle", "busy"})
    public String load;

    private AffinityBalancer balancer;
    private HashRing ring;
    private List<Node> candidates;
    private final long[] keys = new long[4096];
    private int next;

    @Setup
    public void setUp() {
        Random random = new Random(7);
        candidates = BenchFleet.candidates(nodes, random);
        if (load.equals("busy")) {
            BenchFleet.busy(candidates, random);
        }
        for (int i = 0; i < keys.length; i++) {
            keys[i] = KeyHash.of("conversation-" + i);
        }
        balancer = (AffinityBalancer) Strategy.affinity(1.25, Strategy.LEAST_LOADED);
        ring = balancer.ring(candidates); // once per snapshot and model, as routing does
    }

    @Benchmark
    public Node pick() {
        next = (next + 1) & (keys.length - 1);
        return balancer.pick(ring, candidates, candidates, keys[next]).node();
    }
}
