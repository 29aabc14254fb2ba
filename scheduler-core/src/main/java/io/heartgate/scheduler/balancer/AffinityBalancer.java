package io.heartgate.scheduler.balancer;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.time.Ticker;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Cache affinity on a consistent-hash ring of the candidates, by one of two rules. The default,
 * sticky until saturated ({@link StickyRule}, {@code --affinity-bound wait}), keeps a key on its
 * home node until that node is full or its prefill wait passes a limit. The other,
 * {@code --affinity-bound requests}, is consistent hashing with bounded loads (Mirrokni, Thorup and
 * Zadimoghaddam, 2018), described here: a request's key picks the first node after it on the {@link HashRing} of its candidates
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

    /**
     * Where a key went.
     *
     * @param node the node chosen
     * @param owner the key's own node: the first on the whole ring, set aside or not
     * @param passedOver whether the owner could have taken it but was at its bound or its capacity
     * @param uncached the bytes of the request's body the node is not expected to hold in its prefix
     *     cache (the whole body but on the key's home), or -1 when the rule keeps no such memory
     */
    public record Choice(Node node, Node owner, boolean passedOver, long uncached) {
        /** A choice by the bounded-load rule, which keeps no memory of what a node holds. */
        public Choice(Node node, Node owner, boolean passedOver) {
            this(node, owner, passedOver, -1);
        }

        /** Whether the key's own node took it. */
        public boolean hit() {
            return node == owner;
        }
    }

    /** Points visited before a pick falls back to scanning members in order (nearly every node full). */
    private static final int MAX_WALK = 1024;
    private static final int MAX_RINGS = 256;
    /** The most ring points held in all (8 bytes each). */
    private static final long MAX_POINTS_HELD = 1L << 23;

    private final double loadFactor;
    private final Balancer fallback;
    private final Ticker ticker;
    /** The sticky-until-saturated rule, or {@code null} for the bounded-load rule. */
    private final StickyRule sticky;
    /** Rings by member fingerprint, so that a new snapshot with the same members reuses one. */
    private final ConcurrentHashMap<Long, HashRing> rings = new ConcurrentHashMap<>();
    private final AtomicLong pointsHeld = new AtomicLong();

    /**
     * Creates the balancer with load factor {@code c} and the balancer for requests without a key.
     *
     * @throws InvalidSettingException for {@code affinity-load-factor} unless 1 to 100
     */
    public AffinityBalancer(double loadFactor, Balancer fallback) {
        this(loadFactor, fallback, Ticker.SYSTEM, null);
    }

    /**
     * Creates the balancer by the sticky-until-saturated rule: a key leaves its home when the home is
     * full, or (capacity unknown) its expected prefill wait is {@code maxWait} or more; homes are kept
     * in {@code homes}; {@code ticker} times them. {@code loadFactor} is kept for the bounded rule's
     * figures only.
     *
     * @throws InvalidSettingException for {@code affinity-max-wait} unless 0 to 10 minutes
     */
    public static AffinityBalancer sticky(Duration maxWait, KeyHomes homes, Balancer fallback, Ticker ticker) {
        return new AffinityBalancer(Strategy.DEFAULT_LOAD_FACTOR, fallback, ticker,
                new StickyRule(maxWait, homes, ticker));
    }

    /** As {@link #AffinityBalancer(double, Balancer)}, timing a large ring's cached total by {@code ticker} (tests). */
    AffinityBalancer(double loadFactor, Balancer fallback, Ticker ticker) {
        this(loadFactor, fallback, ticker, null);
    }

    private AffinityBalancer(double loadFactor, Balancer fallback, Ticker ticker, StickyRule sticky) {
        if (!(loadFactor >= 1.0 && loadFactor <= 100.0)) {
            throw new InvalidSettingException("affinityLoadFactor", "must be 1 to 100 (1.25: a node takes at most "
                    + "25% more than the mean), was " + loadFactor);
        }
        this.loadFactor = loadFactor;
        this.fallback = fallback;
        this.ticker = ticker;
        this.sticky = sticky;
    }

    /** Says whether keys stay on their home until it is saturated ({@link StickyRule}), not by bounded loads. */
    public boolean sticky() {
        return sticky != null;
    }

    /**
     * The request of {@code bytes} for {@code key} and {@code model} took a slot on {@code node}: under
     * the sticky rule, its conversation's home is there now; nothing under bounded loads.
     */
    public void settle(long key, String model, Node node, long bytes) {
        if (sticky != null) {
            sticky.settle(key, model, node, bytes);
        }
    }

    /** A request without a key: the fallback decides. */
    @Override
    public AffinityBalancer byKey() {
        return this;
    }

    @Override
    public Optional<Node> pick(List<Node> candidates) {
        return fallback.pick(candidates);
    }

    @Override
    public Picker over(List<Node> candidates) {
        return fallback.over(candidates);
    }

    /**
     * Picks for {@code key} among {@code allowed}, which is {@code base} or a subset of it in the same
     * order (the nodes not tried yet, not ejected, warm): the ring is {@code base}'s, so a key keeps
     * its place on it while some nodes are set aside. The bound of a node is its weight's share of
     * {@code c x (total + 1)} over the allowed nodes, rounded up ({@code ceil(c x (total + 1) / n)}
     * for equal weights). Nodes at capacity are passed over like nodes at their bound; when every
     * node with room is at its bound, the least busy of them is taken (a bound must not leave a slot
     * idle while the request waits); when none has room, the key's own node or the first allowed one
     * is returned, and claiming its slot fails. Returns {@code null} only when no allowed node is in
     * {@code base}.
     */
    public Choice pick(List<Node> base, List<Node> allowed, long key) {
        return pick(ring(base), base, allowed, key, 0, null);
    }

    /**
     * As {@link #pick(List, List, long)} on {@code ring}, the ring of {@code base} ({@link #ring}), which
     * a caller keeps with the snapshot {@code base} belongs to instead of having it looked up per pick,
     * for a request of {@code bytes} of body for {@code model} (normalised, or {@code null}): the
     * sticky rule weighs its prefill.
     */
    public Choice pick(HashRing ring, List<Node> base, List<Node> allowed, long key, long bytes, String model) {
        if (allowed.isEmpty()) {
            return null;
        }
        boolean[] mask = allowed == base ? null : mask(ring, allowed);
        if (sticky != null) {
            return sticky.pick(ring, base, mask, key, bytes, model);
        }
        int start = ring.start(key);
        int ownerIndex = ring.memberAt(start, 0);
        Node owner = base.get(ownerIndex);
        boolean ownerAllowed = mask == null || mask[ownerIndex];
        Totals load = null; // worked out when first needed: a node with nothing in flight is under any bound
        int walk = Math.min(MAX_WALK, ring.points());
        for (int s = 0; s < walk; s++) {
            int m = ring.memberAt(start, s);
            if (mask != null && !mask[m]) {
                continue;
            }
            int busy = ring.inFlight(m);
            if (busy > 0) {
                if (load == null) {
                    load = load(ring, mask);
                }
                if (busy >= load.bound(ring.weight(m))) {
                    continue;
                }
            }
            Node c = base.get(m);
            if (c.hasRoom()) {
                return new Choice(c, owner, ownerAllowed && c != owner);
            }
        }
        return scan(ring, base, mask, owner, ownerAllowed, load == null ? load(ring, mask) : load);
    }

    /**
     * The slow way round, when the walk found nothing (nearly every node full, or few allowed among
     * many): members in order, the first under its bound with room, else the least busy with room.
     */
    private Choice scan(HashRing ring, List<Node> base, boolean[] mask, Node owner, boolean ownerAllowed, Totals load) {
        Node first = null;
        Node leastBusy = null;
        int leastBusyLoad = Integer.MAX_VALUE;
        for (int m = 0; m < ring.members(); m++) {
            if (mask != null && !mask[m]) {
                continue;
            }
            Node c = base.get(m);
            first = first == null ? c : first;
            if (!c.hasRoom()) {
                continue;
            }
            int busy = ring.inFlight(m);
            if (busy < load.bound(ring.weight(m))) {
                return new Choice(c, owner, ownerAllowed && c != owner);
            }
            if (busy < leastBusyLoad) {
                leastBusy = c;
                leastBusyLoad = busy;
            }
        }
        if (leastBusy != null) {
            return new Choice(leastBusy, owner, ownerAllowed && leastBusy != owner);
        }
        Node full = ownerAllowed ? owner : first;
        return full == null ? null : new Choice(full, owner, false); // every node full: the claim fails, the request waits
    }

    /** The allowed members' requests in flight and weights, from which each node's bound follows. */
    private final class Totals {
        private final long total;
        private final long weights;

        Totals(long total, long weights) {
            this.total = total;
            this.weights = weights;
        }

        /** Returns {@code ceil(c * (total + 1) * weight / weights)}. */
        long bound(int weight) {
            return (long) Math.ceil(loadFactor * (total + 1) * weight / weights);
        }
    }

    private Totals load(HashRing ring, boolean[] mask) {
        if (mask == null) {
            return new Totals(ring.totalInFlight(ticker.nanos()), ring.weightSum());
        }
        long total = 0;
        long weights = 0;
        for (int m = 0; m < ring.members(); m++) {
            if (mask == null || mask[m]) {
                total += ring.inFlight(m);
                weights += ring.weight(m);
            }
        }
        return new Totals(total, weights);
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

    /**
     * Returns the ring of {@code base}: the one of its members if they have one, else built, once:
     * event loops that meet a new membership together wait for the one building it, and a new
     * snapshot with the same members reuses it. Rings of memberships gone are dropped when more than
     * {@value #MAX_RINGS} rings or {@value #MAX_POINTS_HELD} points are held. Reads every member:
     * callers keep the ring with their snapshot rather than ask per pick.
     */
    public HashRing ring(List<Node> base) {
        long fp = HashRing.fingerprint(base);
        HashRing ring = rings.get(fp);
        if (ring == null || !ring.sameMembers(base)) {
            if (rings.size() >= MAX_RINGS || pointsHeld.get() > MAX_POINTS_HELD) {
                rings.clear(); // memberships long gone; the ones in use come back on their next pick
                pointsHeld.set(0);
            }
            ring = rings.compute(fp, (k, old) -> {
                if (old != null && old.sameMembers(base)) {
                    return old;
                }
                HashRing built = new HashRing(base);
                pointsHeld.addAndGet(built.points() - (old == null ? 0 : old.points()));
                return built;
            });
        }
        return ring;
    }

    /** Returns the load factor {@code c}. */
    public double loadFactor() {
        return loadFactor;
    }
}
