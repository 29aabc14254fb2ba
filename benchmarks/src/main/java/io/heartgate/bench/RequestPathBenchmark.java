package io.heartgate.bench;

import io.heartgate.scheduler.proxy.InMemoryProxy;
import io.heartgate.scheduler.proxy.ProxyConfig;
import io.heartgate.scheduler.proxy.Transport;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import java.time.Duration;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost meter of the request path: one request (two for {@code QUEUED}) through the whole proxy
 * on in-memory channels ({@link InMemoryProxy}): the client's bytes through the codec, the stages,
 * routing and the relay to the node's codec, and the node's answer back. Run with {@code -prof gc}:
 * {@code gc.alloc.rate.norm} (bytes per operation) is deterministic where time on a shared machine
 * is not, so it is the figure that gates a change. The benchmark threads are Netty
 * {@code FastThreadLocalThread}s ({@link EventLoopLikeThreads}), as an event loop is, so Netty recycles
 * on them what it recycles on a loop.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar RequestPath -prof gc</pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Djmh.executor=CUSTOM",
        "-Djmh.executor.class=io.heartgate.bench.EventLoopLikeThreads"})
@State(Scope.Thread)
public class RequestPathBenchmark {

    @Param({"CHAT", "SSE", "NDJSON", "KEYS", "AFFINITY", "QUEUED", "TRACED"})
    public InMemoryProxy.Scenario scenario;

    private InMemoryProxy proxy;

    @Setup
    public void setUp() {
        proxy = InMemoryProxy.of(scenario, defaults());
        proxy.exchange(); // fails here, not in a measurement, if the path is broken
    }

    @TearDown
    public void tearDown() {
        proxy.close();
    }

    @Benchmark
    public long request() {
        return proxy.exchange();
    }

    /** The command line's defaults (docs/REFERENCE.md). */
    static ProxyConfig defaults() {
        return new ProxyConfig("127.0.0.1", 0, 16L * 1024 * 1024, 2, Duration.ofSeconds(2), Duration.ofMinutes(5),
                Duration.ofMinutes(2), Duration.ofSeconds(30), 3, Duration.ofSeconds(10), 1, Transport.AUTO,
                Duration.ofSeconds(75), UpstreamAllowList.ALLOW_ALL, Duration.ofSeconds(10), Duration.ofSeconds(60),
                10_000, false, Duration.ofSeconds(30), 1000, Duration.ofSeconds(60), false, 0, 1);
    }
}
