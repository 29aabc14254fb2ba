package io.heartgate.protocol;

/**
 * Holds the load figures a node reports; each is {@code null} when the backend does not expose it.
 *
 * @param inFlight requests the server is working on now, or {@code null}
 * @param queued requests waiting for a slot, or {@code null}
 * @param kvCacheUsage fraction of the KV cache in use, 0 to 1, or {@code null}
 * @param prefixCacheHitRate fraction of the prompt tokens looked up in the prefix cache since the
 *     agent's previous reading that were found there (about one heartbeat period), 0 to 1, or
 *     {@code null} (no cache, or nothing looked up)
 * @param prefillTps prompt tokens the server prefills per second, as measured from its metrics over
 *     recent heartbeat periods or as set by the agent's {@code --prefill-tps}; above 0 and at most
 *     {@value HeartbeatRules#MAX_PREFILL_TPS}, or {@code null} when unknown. What lets a scheduler
 *     estimate how long a prompt would wait on the node before its first token
 */
public record Load(Integer inFlight, Integer queued, Double kvCacheUsage, Double prefixCacheHitRate,
                   Double prefillTps) {

    /** A load with no figures at all. */
    public static final Load UNKNOWN = new Load(null, null, null, null, null);

    /** A load without a prefix-cache figure or a prefill speed. */
    public Load(Integer inFlight, Integer queued, Double kvCacheUsage) {
        this(inFlight, queued, kvCacheUsage, null, null);
    }

    /** A load without a prefill speed. */
    public Load(Integer inFlight, Integer queued, Double kvCacheUsage, Double prefixCacheHitRate) {
        this(inFlight, queued, kvCacheUsage, prefixCacheHitRate, null);
    }

    /** Returns whether no figure is known. */
    public boolean isUnknown() {
        return inFlight == null && queued == null && kvCacheUsage == null && prefixCacheHitRate == null
                && prefillTps == null;
    }

    /** Returns a copy with the prefix cache's hit rate. */
    public Load withPrefixCacheHitRate(Double rate) {
        return new Load(inFlight, queued, kvCacheUsage, rate, prefillTps);
    }

    /** Returns a copy with {@code tps} as its {@link #prefillTps()}; {@code null} makes it unknown. */
    public Load withPrefillTps(Double tps) {
        return new Load(inFlight, queued, kvCacheUsage, prefixCacheHitRate, tps);
    }
}
