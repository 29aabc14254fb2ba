package io.heartgate.scheduler.table;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * This scheduler's token load on one node and what it has learned of the node's speed: the prompt
 * tokens of the requests sent to it that have not reached their first token yet (its prefill
 * backlog, estimated from the requests' bodies), how many such requests there are (the rest of its
 * requests in flight are decoding), the node's prefill speed in prompt tokens per second, learned
 * per model from first-token times against the tokens ahead of and in each request, and how many
 * prompt tokens a byte of request body is on this node, corrected by the usage the node reports.
 * Shared by every snapshot of the node, like {@link InFlight}. Thread-safe; a pick reads a few
 * volatile fields and allocates nothing.
 */
public final class TokenLoad {

    /** The prefill speed assumed for a model before the node's first sample: a cautious figure for one GPU. */
    public static final double DEFAULT_TPS = 1_000;
    /** Prompt tokens per byte of body before the node reports any usage: about four characters a token. */
    public static final double DEFAULT_TOKENS_PER_BYTE = 0.25;
    /** Weight of a new sample in the moving averages: the last ten or so samples count. */
    static final double ALPHA = 0.2;
    /** Requests with fewer prompt tokens (ahead and own) than this teach nothing of speed: fixed costs would dominate. */
    static final long MIN_SAMPLE_TOKENS = 256;
    /** At most this many models' speeds per node; a heartbeat lists at most 64 loaded. */
    static final int MAX_MODELS = 64;

    private final AtomicLong backlog = new AtomicLong();
    private final AtomicInteger prefilling = new AtomicInteger();
    private final ConcurrentHashMap<String, Average> speeds = new ConcurrentHashMap<>();
    private final Average tokensPerByte = new Average(DEFAULT_TOKENS_PER_BYTE);

    /**
     * An exponentially weighted moving average from an assumed value, lock-free (event loops add
     * samples at once). A sample counts at most {@value #STEP} times above or below the average, the
     * first one too, so that one outlier cannot throw it (a short request whose first token came
     * while a long prompt ahead of it was still being prefilled in chunks): from the assumed value a
     * true one ten times higher is reached in some seven samples.
     */
    private static final class Average {
        private final AtomicLong bits;
        private volatile boolean sampled;

        Average(double assumed) {
            this.bits = new AtomicLong(Double.doubleToRawLongBits(assumed));
        }

        double value() {
            return Double.longBitsToDouble(bits.get());
        }

        void add(double sample) {
            while (true) {
                long was = bits.get();
                double v = Double.longBitsToDouble(was);
                double next = v + ALPHA * (Math.max(v / STEP, Math.min(v * STEP, sample)) - v);
                if (bits.compareAndSet(was, Double.doubleToRawLongBits(next))) {
                    sampled = true;
                    return;
                }
            }
        }

        boolean sampled() {
            return sampled;
        }
    }

    /** How far above or below the average a sample counts. */
    static final double STEP = 4;

    /** Returns the estimated prompt tokens of the requests sent and not yet at their first token. */
    public long backlog() {
        return backlog.get();
    }

    /** Returns how many of this scheduler's requests on the node have not reached their first token. */
    public int prefilling() {
        return prefilling.get();
    }

    /** Returns the prompt tokens that {@code bytes} of request body are on this node, as its usage taught. */
    public long tokens(long bytes) {
        return (long) Math.ceil(bytes * tokensPerByte.value());
    }

    /**
     * Returns the node's prefill speed for {@code model} (normalised, or {@code null} for none) in
     * prompt tokens per second: {@code reported} when the node reports one (positive), else what was
     * learned, else {@link #DEFAULT_TPS}.
     */
    public double tps(String model, Double reported) {
        if (reported != null && reported > 0) {
            return reported;
        }
        Average a = speeds.get(model == null ? "" : model);
        return a == null ? DEFAULT_TPS : a.value();
    }

    /** Returns the prefill speeds learned so far, by model ("" for requests naming none); a copy. */
    public Map<String, Double> learned() {
        Map<String, Double> out = new TreeMap<>();
        speeds.forEach((model, a) -> {
            if (a.sampled()) {
                out.put(model, a.value());
            }
        });
        return out;
    }

    /** Returns the prompt tokens a byte of request body is on this node, as its usage taught (0.25 until then). */
    public double tokensPerByte() {
        return tokensPerByte.value();
    }

    /** Returns whether a speed was learned for {@code model}. */
    public boolean learned(String model) {
        Average a = speeds.get(model == null ? "" : model);
        return a != null && a.sampled();
    }

    /**
     * Returns the seconds until the prefill of a request with {@code ownTokens} uncached prompt
     * tokens would be done on this node, at {@code tps}: the backlog ahead of it and its own tokens.
     */
    public double waitSeconds(long ownTokens, double tps) {
        return (backlog.get() + ownTokens) / tps;
    }

    /** Adds a request of {@code tokens} uncached prompt tokens to the backlog; returns the backlog ahead of it. */
    public long sent(long tokens) {
        prefilling.incrementAndGet();
        return backlog.getAndAdd(tokens);
    }

    /** The request of {@code tokens} reached its first token, or ended before it: it leaves the backlog. */
    public void prefilled(long tokens) {
        prefilling.decrementAndGet();
        backlog.addAndGet(-tokens);
    }

    /**
     * Learns from a request whose first token came {@code nanos} after it was sent with {@code ahead}
     * tokens of backlog before its own {@code own}: the node prefilled {@code ahead + own} tokens in
     * that time. Too small a request, or no time at all, teaches nothing.
     */
    public void firstToken(String model, long ahead, long own, long nanos) {
        long tokens = Math.max(0, ahead) + own;
        if (tokens < MIN_SAMPLE_TOKENS || nanos <= 0) {
            return;
        }
        String key = model == null ? "" : model;
        Average a = speeds.get(key);
        if (a == null) {
            if (speeds.size() >= MAX_MODELS) {
                return;
            }
            a = speeds.computeIfAbsent(key, k -> new Average(DEFAULT_TPS));
        }
        a.add(Math.min(1e7, tokens * 1e9 / nanos));
    }

    /**
     * The node reported {@code promptTokens} for a request of {@code bytes} of body: the next
     * estimates of this node's requests follow the ratio. A ratio no prompt written in its body has
     * (more than one token per byte, or under one per 50) is passed over: the prompt was not all in
     * the body (a Responses API follow-up, whose conversation the node kept).
     */
    public void reported(long bytes, long promptTokens) {
        double ratio = bytes >= 64 && promptTokens > 0 ? (double) promptTokens / bytes : 0;
        if (ratio >= 0.02 && ratio <= 1.0) {
            tokensPerByte.add(ratio);
        }
    }
}
