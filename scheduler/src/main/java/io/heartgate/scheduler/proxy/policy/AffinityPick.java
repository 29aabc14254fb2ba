package io.heartgate.scheduler.proxy.policy;

/**
 * How the {@code affinity} strategy placed one attempt, as its response's
 * {@code X-Heartgate-Affinity} header and {@code heartgate_affinity_total{result}} say.
 *
 * @param result {@code hit} (the key's own node on the ring), {@code spill} (a later node: the own
 *     one was at its load bound or its capacity) or {@code none} (the request had no key)
 * @param spilledFrom the key's own node when it spilled, else {@code null}
 */
public record AffinityPick(String result, String spilledFrom) {

    /** The key's own node took it. */
    public static final AffinityPick HIT = new AffinityPick("hit", null);
    /** No key: the fallback strategy chose. */
    public static final AffinityPick NONE = new AffinityPick("none", null);

    /** The key went past {@code ownNodeId}, at its bound, to a later node. */
    public static AffinityPick spill(String ownNodeId) {
        return new AffinityPick("spill", ownNodeId);
    }
}
