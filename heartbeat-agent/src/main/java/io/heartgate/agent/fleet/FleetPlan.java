package io.heartgate.agent.fleet;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.NodeState;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * What a synthetic fleet's nodes look like and when they die, join and flap: pure, from a seed. Node
 * {@code i} is {@code syn-000042}-style, at {@code http://127.a.b.c:8000} (a loopback address of its
 * own, so nothing ever leaves the machine), serving two or three of a catalogue of models on one of
 * the backends, with GPUs, a capacity and load figures that move each beat.
 */
final class FleetPlan {

    static final List<String> MODELS = List.of("llama3.1:8b", "llama3.1:70b", "qwen2.5:7b", "qwen2.5:32b",
            "mistral:7b", "mixtral:8x7b", "gemma2:9b", "gemma2:27b", "phi3:14b", "deepseek-r1:8b",
            "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3",
            "codellama:13b", "llava:7b", "nomic-embed-text:latest", "bge-m3:latest", "starcoder2:15b",
            "command-r:35b", "granite3.1-dense:8b");
    static final List<String> BACKENDS = List.of("vllm", "ollama", "sglang", "llamacpp", "tgi");

    private final int nodes;
    private final int intervalMs;

    FleetPlan(int nodes, int intervalMs) {
        if (nodes < 1 || nodes > 1_000_000) {
            throw new IllegalArgumentException("nodes: must be 1 to 1000000, was " + nodes);
        }
        this.nodes = nodes;
        this.intervalMs = intervalMs;
    }

    int nodes() {
        return nodes;
    }

    /** Returns node {@code i}'s id. */
    static String id(int i) {
        return String.format("syn-%06d", i);
    }

    /** Returns node {@code i}'s URL: a loopback address of its own, 127.1.0.1 onwards. */
    static String url(int i) {
        return "http://127." + (1 + i / 62_500) + "." + (i / 250 % 250) + "." + (1 + i % 250) + ":8000";
    }

    /**
     * Returns node {@code i}'s heartbeat number {@code seq} of life {@code instance}, in {@code state}:
     * its static profile from {@code i}, its load figures from {@code random}.
     */
    Heartbeat heartbeat(int i, String instance, long seq, NodeState state, Random random, Instant now) {
        int backend = i % BACKENDS.size();
        List<String> models = new ArrayList<>(3);
        for (int k = 0; k < 2 + i % 2; k++) {
            models.add(MODELS.get((i * 7 + k * 3) % MODELS.size()));
        }
        int capacity = 8 << (i % 4);
        int inFlight = random.nextInt(capacity + 1);
        List<Gpu> gpus = new ArrayList<>();
        for (int g = 0; g < 1 << (i % 4); g++) {
            gpus.add(new Gpu("NVIDIA H100 80GB HBM3", Math.round(random.nextDouble() * 100) / 100.0,
                    40_000L + random.nextInt(40_000), 81_559L));
        }
        return Heartbeat.builder(id(i), url(i)).instance(instance).seq(seq).state(state).weight(1 + i % 3)
                .intervalMs(intervalMs).sentAt(now).backend(BACKENDS.get(backend)).models(models).capacity(capacity)
                .load(new Load(inFlight, random.nextInt(4), Math.round(random.nextDouble() * 100) / 100.0,
                        Math.round(random.nextDouble() * 100) / 100.0, null))
                .gpus(gpus).build();
    }

    /**
     * Spreads a per-minute share of the fleet over ticks: returns how many of {@code rate} x nodes a
     * minute fall due in a tick of {@code tickMs}, carrying the fraction in {@code carry[0]}.
     */
    int due(double rate, long tickMs, double[] carry) {
        carry[0] += rate * nodes * tickMs / 60_000.0;
        int whole = (int) carry[0];
        carry[0] -= whole;
        return whole;
    }
}
