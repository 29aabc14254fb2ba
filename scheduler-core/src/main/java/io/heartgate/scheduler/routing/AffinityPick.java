package io.heartgate.scheduler.routing;

/**
 * How the {@code affinity} strategy placed one attempt, as its response's
 * {@code X-Heartgate-Affinity} header and {@code heartgate_affinity_total{result}} say.
 *
 * @param result {@code hit} (the key's own node on the ring), {@code spill} (a later node: the own
 *     one was at its load bound or its capacity, or set aside for this request: already tried,
 *     ejected, cold under warm first) or {@code none} (the request had no key)
 * @param spilledFrom the key's own node when its bound or capacity passed the key on, else {@code null}
 */
public record AffinityPick(String result, String spilledFrom) {

    /** The key's own node took it. */
    public static final AffinityPick HIT = new AffinityPick("hit", null);
    /** No key: the fallback strategy chose. */
    public static final AffinityPick NONE = new AffinityPick("none", null);

    /** The key went to a later node; {@code ownNodeId} when its own node's bound or capacity sent it on, else {@code null}. */
    public static AffinityPick spill(String ownNodeId) {
        return new AffinityPick("spill", ownNodeId);
    }
}
