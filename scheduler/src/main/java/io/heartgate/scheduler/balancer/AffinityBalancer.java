package io.heartgate.scheduler.balancer;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.table.Node;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Consistent hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam, 2018), for cache
 * affinity: a request's key picks the first node after it on the {@link HashRing} of its candidates
 * whose requests in flight (this scheduler's) are under {@code ceil(c * (total + 1) / nodes)}, the
 * total being every candidate's in flight; a node at that bound passes the key on to the next node
 * on the ring, so a hot key spills instead of queueing, and no node ever holds more than {@code c}
 * times the mean. A key lands on the same node for as long as that node is a candidate under its
 * bound: its KV cache of the conversation stays useful. Requests without a key go to the fallback
 * balancer.
 *
 * <p>A ring is built once per candidate membership (ids, weights) and reused by every snapshot
 * with those members; a pick is a binary search plus, when the key's node has requests in flight,
 * one pass summing the candidates' counts. Thread-safe.
 */
public final class AffinityBalancer implements Balancer {

    /** Where a key went: {@code node}, its own node on the ring being {@code own}. */
    public record Choice(Node node, Node own) {
        /** Whether the key's own node took it. */
        public boolean hit() {
            return node == own;
        }
    }

    /** Points visited before a pick falls back to scanning members in order (nearly every node full). */
    private static final int MAX_WALK = 1024;
    private static final int CACHE_SLOTS = 64;
    private static final int MAX_RINGS = 256;

    private final double loadFactor;
    private final Balancer fallback;
    /** Candidate list (by identity) to its ring, direct-mapped: the lists of current snapshots. */
    private final AtomicReferenceArray<Bound> recent = new AtomicReferenceArray<>(CACHE_SLOTS);
    /** Rings by member fingerprint, so that a new snapshot with the same members reuses one. */
    private final ConcurrentHashMap<Long, HashRing> rings = new ConcurrentHashMap<>();

    private record Bound(List<Node> list, HashRing ring) {
    }

    /**
     * Creates the balancer with load factor {@code c} and the balancer for requests without a key.
     *
     * @throws InvalidSettingException for {@code affinity-load-factor} unless 1 to 100
     */
    public AffinityBalancer(double loadFactor, Balancer fallback) {
        if (!(loadFactor >= 1.0 && loadFactor <= 100.0)) {
            throw new InvalidSettingException("affinityLoadFactor", "must be 1 to 100 (1.25: a node takes at most "
                    + "25% more than the mean), was " + loadFactor);
        }
        this.loadFactor = loadFactor;
        this.fallback = fallback;
    }

    /** A request without a key: the fallback decides. */
    @Override
    public Optional<Node> pick(List<Node> candidates) {
        return fallback.pick(candidates);
    }

    /**
     * Picks for {@code key} among {@code allowed}, which is {@code base} or a subset of it in the same
     * order (the nodes not tried yet, not ejected, warm): the ring is {@code base}'s, so a key keeps
     * its place on it while some nodes are set aside. Nodes at capacity are passed over like nodes at
     * their bound. Returns {@code null} only when {@code allowed} is empty.
     */
    public Choice pick(List<Node> base, List<Node> allowed, long key) {
        if (allowed.isEmpty()) {
            return null;
        }
        HashRing ring = ring(base);
        boolean[] mask = allowed == base ? null : mask(ring, allowed);
        int n = allowed.size();
        int start = ring.start(key);
        Node own = null;
        long bound = -1; // worked out when first needed: a node with nothing in flight is under any bound
        int walk = Math.min(MAX_WALK, ring.points());
        for (int s = 0; s < walk; s++) {
            int m = ring.memberAt(start, s);
            if (mask != null && !mask[m]) {
                continue;
            }
            Node c = base.get(m);
            if (own == null) {
                own = c;
            }
            int load = ring.inFlight(m);
            if (load > 0) {
                if (bound < 0) {
                    bound = bound(ring, mask, n);
                }
                if (load >= bound) {
                    continue;
                }
            }
            if (c.hasRoom()) {
                return new Choice(c, own);
            }
        }
        return scan(ring, base, mask, n, own);
    }

    /** The slow way round for a ring whose walk found nothing: members in order, the first under its bound with room. */
    private Choice scan(HashRing ring, List<Node> base, boolean[] mask, int n, Node own) {
        long bound = bound(ring, mask, n);
        Node first = null;
        for (int m = 0; m < ring.members(); m++) {
            if (mask != null && !mask[m]) {
                continue;
            }
            Node c = base.get(m);
            if (first == null) {
                first = c;
            }
            if (ring.inFlight(m) < bound && c.hasRoom()) {
                return new Choice(c, own == null ? c : own);
            }
        }
        Node fallbackOwn = own == null ? first : own;
        return new Choice(fallbackOwn, fallbackOwn); // every node full: the claim fails and the request waits
    }

    /** Returns {@code ceil(c * (total in flight + 1) / n)} over the allowed members. */
    private long bound(HashRing ring, boolean[] mask, int n) {
        long total = 0;
        for (int m = 0; m < ring.members(); m++) {
            if (mask == null || mask[m]) {
                total += ring.inFlight(m);
            }
        }
        return (long) Math.ceil(loadFactor * (total + 1) / n);
    }

    private static boolean[] mask(HashRing ring, List<Node> allowed) {
        boolean[] mask = new boolean[ring.members()];
        for (Node a : allowed) {
            int i = ring.indexOf(a.id());
            if (i >= 0) {
                mask[i] = true;
            }
        }
        return mask;
    }

    /** Returns the ring of {@code base}: cached for the list, else for its members, else built. */
    HashRing ring(List<Node> base) {
        int slot = System.identityHashCode(base) & (CACHE_SLOTS - 1);
        Bound b = recent.get(slot);
        if (b != null && b.list() == base) {
            return b.ring();
        }
        long fp = HashRing.fingerprint(base);
        HashRing ring = rings.get(fp);
        if (ring == null || !ring.sameMembers(base)) {
            ring = new HashRing(base);
            if (rings.size() >= MAX_RINGS) {
                rings.clear(); // memberships long gone; the ones in use come back on their next pick
            }
            rings.put(fp, ring);
        }
        recent.set(slot, new Bound(base, ring));
        return ring;
    }

    /** Returns the load factor {@code c}. */
    public double loadFactor() {
        return loadFactor;
    }
}
