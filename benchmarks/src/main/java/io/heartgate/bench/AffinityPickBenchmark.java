package io.heartgate.bench;

import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.balancer.AffinityBalancer;
import io.heartgate.scheduler.balancer.HashRing;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.time.Ticker;
import java.time.Duration;
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
 * (weights 1 to 5, capacity unknown), a different key each time, a body of 4,000 bytes, by each
 * rule: {@code sticky} (sticky until saturated, 1 s wait limit) and {@code bounded} (bounded
 * loads). {@code idle}: nothing in flight, so no pick needs the load bound and every home's wait
 * is its own prefill; {@code busy}: 0 to 2 requests in flight per node and up to 500 tokens of
 * prefill backlog (half a second at the assumed speed), so most bounded picks sum every
 * candidate's count and every sticky one weighs its home's wait; {@code saturated}: as busy, with
 * 2,000 to 10,000 tokens of backlog, so every sticky home is past the limit and the pick compares
 * up to 32 candidates.
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

    @Param({"idle", "busy", "saturated"})
    public String load;

    @Param({"sticky", "bounded"})
    public String rule;

    private AffinityBalancer balancer;
    private HashRing ring;
    private List<Node> candidates;
    private final long[] keys = new long[4096];
    private int next;

    @Setup
    public void setUp() {
        Random random = new Random(7);
        candidates = BenchFleet.candidates(nodes, random);
        if (!load.equals("idle")) {
            BenchFleet.busy(candidates, random);
            for (Node n : candidates) {
                n.inFlight().tokens().sent(load.equals("busy") ? random.nextInt(500) : 2_000 + random.nextInt(8_000));
            }
        }
        for (int i = 0; i < keys.length; i++) {
            keys[i] = KeyHash.of("conversation-" + i);
        }
        balancer = (AffinityBalancer) (rule.equals("sticky")
                ? Strategy.sticky(Duration.ofSeconds(1), Strategy.LEAST_LOADED, Ticker.SYSTEM)
                : Strategy.affinity(1.25, Strategy.LEAST_LOADED));
        ring = balancer.ring(candidates); // once per snapshot and model, as routing does
    }

    @Benchmark
    public Node pick() {
        next = (next + 1) & (keys.length - 1);
        Node n = balancer.pick(ring, candidates, candidates, keys[next], 4_000, "llama3:8b").node();
        balancer.settle(keys[next], "llama3:8b", n, 4_000); // the home noted once the slot is taken, as routing does
        return n;
    }
}
