package io.heartgate.bench;

import io.heartgate.scheduler.trust.ApiKeys;
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
 * Measures what an API key costs a request on the proxy: hashing the presented key and finding it
 * among {@code keys} keys (a valid key, and a wrong one), which is the authentication stage's work
 * besides two header removals.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class ApiKeysBenchmark {

    @Param({"1", "1000"})
    public int keys;

    private ApiKeys apiKeys;
    private String valid;
    private String wrong;

    @Setup
    public void setUp() {
        StringBuilder file = new StringBuilder();
        for (int i = 0; i < keys; i++) {
            String key = "hg-" + String.format("%043d", i);
            file.append("caller-").append(i).append(' ').append(ApiKeys.hash(key)).append('\n');
            valid = key;
        }
        apiKeys = ApiKeys.parse(file.toString());
        wrong = "hg-" + "x".repeat(43);
    }

    @Benchmark
    public ApiKeys.Key findValid() {
        return apiKeys.find(valid);
    }

    @Benchmark
    public ApiKeys.Key findWrong() {
        return apiKeys.find(wrong);
    }
}
