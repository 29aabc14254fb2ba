package io.heartgate.bench;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.HeartbeatVerifier;
import io.heartgate.protocol.signing.Signature;
import io.heartgate.protocol.signing.Verification;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
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
 * Measures signed heartbeats: the agent signing one record, and the scheduler verifying one with 1
 * or 3 keys configured (3 as in a rotation, the record signed by the last), each key limited to
 * {@code gpu-*} so the glob is matched too. The record is a heartbeat of a 4-GPU host, about 750
 * bytes of JSON. {@code decode} is the codec's cost for the same record, to set verification against;
 * the codec needs the longer warm-up (5 x 2 s) to reach its steady state.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class SigningBenchmark {

    @Param({"1", "3"})
    public int keys;

    private final HeartbeatCodec codec = new HeartbeatCodec();
    private HeartbeatSigner signer;
    private HeartbeatVerifier verifier;
    private byte[] key;
    private byte[] value;
    private byte[] keyIdHeader;
    private byte[] signatureHeader;

    @Setup
    public void setUp() {
        StringBuilder file = new StringBuilder();
        for (int i = 0; i < keys; i++) {
            file.append("key-2026-0").append(i + 1).append(' ').append(secret(i)).append(" gpu-*\n");
        }
        HeartbeatKeys all = HeartbeatKeys.parse(file.toString());
        HeartbeatKeys agentKey = HeartbeatKeys.parse(file.substring(file.lastIndexOf("key-2026-")));
        signer = new HeartbeatSigner(agentKey);
        verifier = new HeartbeatVerifier(all);

        List<Gpu> gpus = new ArrayList<>();
        for (int g = 0; g < 4; g++) {
            gpus.add(new Gpu("NVIDIA H100 80GB HBM3", 0.25 + g * 0.05, 40_000L + g * 1_234, 81_559L));
        }
        Heartbeat hb = Heartbeat.builder("gpu-rack3-node17", "http://10.0.3.17:8000")
                .instance("6f1c0b1e-2a4d-4b8e-9f3a-0c5d7e9a1b2c").seq(123_456L).weight(8).intervalMs(1000)
                .sentAt(Instant.parse("2026-12-01T10:00:00.123Z")).backend("vllm")
                .models(List.of("meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen2.5-7B-Instruct"))
                .load(new Load(12, 3, 0.62)).gpus(gpus)
                .build();
        key = hb.nodeId().getBytes(StandardCharsets.UTF_8);
        value = codec.encode(hb);
        Signature s = signer.sign(key, value);
        keyIdHeader = s.keyIdHeader();
        signatureHeader = s.signatureHeader();
        if (!verifier.verify(key, value, keyIdHeader, signatureHeader).isVerified()) {
            throw new IllegalStateException("the benchmark's record does not verify");
        }
    }

    @Benchmark
    public Verification verify() {
        return verifier.verify(key, value, keyIdHeader, signatureHeader);
    }

    @Benchmark
    public Signature sign() {
        return signer.sign(key, value);
    }

    @Benchmark
    public Object decode() {
        return codec.decodeRecord(key, value);
    }

    /** Returns the value length, for the report; not a benchmark. */
    public int valueBytes() {
        return value.length;
    }

    private static String secret(int i) {
        return String.format("%064x", 0x5c0f3e0d9b7a4c21L * (i + 1));
    }
}
