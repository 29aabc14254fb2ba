package io.heartgate.bench;

import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.Load;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.table.TableSnapshot;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
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
 * Measures the heartbeat path of one scheduler for a table of 10,000 or 100,000 nodes: decode a
 * record's bytes, apply it to the table, publish a snapshot when due (renewals every 50 ms, as in
 * production, or later for a table slow to publish). The inverse of the throughput is the CPU time
 * per heartbeat on one core. {@code publishRenewal} and {@code buildSnapshot} price one publish: a
 * renewal's snapshot (positions reused) and a snapshot worked out from scratch (a change of
 * structure, and what every publish cost before renewals reused positions).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class ApplyBenchmark {

    @Param({"10000", "100000"})
    public int nodes;

    private final HeartbeatCodec codec = new HeartbeatCodec();
    private NodeTable table;
    private byte[][] keys;
    private byte[][] values;
    private int next;

    @Setup
    public void setUp() {
        table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        keys = new byte[nodes][];
        values = new byte[nodes][];
        for (int i = 0; i < nodes; i++) {
            String id = String.format("gpu-%05d", i);
            // No seq: every heartbeat takes the full accept path instead of the cheaper old-seq exit.
            Heartbeat hb = Heartbeat.builder(id, "http://10.0." + (i / 250) + "." + (i % 250) + ":11434")
                    .instance("6f1c0b1e-2a4d-4b8e-9f3a-0c5d7e9a1b2c").weight(1 + i % 5).intervalMs(500)
                    .sentAt(Instant.now()).backend("vllm").models(List.of("llama3:8b", "qwen2.5:7b"))
                    .load(new Load(i % 8, i % 3, 0.25))
                    .build();
            keys[i] = id.getBytes(StandardCharsets.UTF_8);
            values[i] = codec.encode(hb);
            table.apply(hb, Instant.now());
        }
        table.publish();
    }

    @Benchmark
    public Object applyHeartbeat() {
        int i = next;
        next = i + 1 == nodes ? 0 : i + 1;
        Decoded d = codec.decodeRecord(keys[i], values[i]);
        Object outcome = table.apply(((Decoded.Beat) d).heartbeat(), Instant.now());
        table.publishIfDue();
        return outcome;
    }

    /** Decoding and checking one record alone, the part of {@link #applyHeartbeat} before the table. */
    @Benchmark
    public Object decodeHeartbeat() {
        int i = next;
        next = i + 1 == nodes ? 0 : i + 1;
        return codec.decodeRecord(keys[i], values[i]);
    }

    /** One heartbeat applied and a renewal's snapshot published at once. */
    @Benchmark
    public Object publishRenewal() {
        int i = next;
        next = i + 1 == nodes ? 0 : i + 1;
        table.apply(((Decoded.Beat) codec.decodeRecord(keys[i], values[i])).heartbeat(), Instant.now());
        table.publish();
        return table.snapshot();
    }

    /** A snapshot of the whole table worked out from scratch. */
    @Benchmark
    public Object buildSnapshot() {
        TableSnapshot s = table.snapshot();
        return new TableSnapshot(s.version() + 1, s.nodes());
    }
}
