package io.heartgate.scheduler.balancer;

import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * A consistent-hash ring over one candidate list: each node owns points placed by hashing its id
 * with a replica number, as many as {@value #POINTS_PER_WEIGHT} times its weight over the lightest
 * weight listed, so that its share of keys follows its weight; a key belongs to the first point at
 * or after its hash. A node's points depend on its id alone, so when one node joins or leaves only
 * the keys of the arcs it gains or loses change owner. Immutable but for a large ring's cached
 * in-flight total, and shared by every snapshot with the same members; the nodes themselves are
 * read from the list it is used with, in the same order.
 */
public final class HashRing {

    /** Points per unit of relative weight: a node's share of keys is then within about 6% (one standard deviation) of its due. */
    static final int POINTS_PER_WEIGHT = 256;
    /** Member index bits packed under each point's position. */
    private static final int MEMBER_BITS = 20;
    private static final long MEMBER_MASK = (1L << MEMBER_BITS) - 1;
    /** The most points a ring holds: 8 MiB of positions; a larger fleet gets fewer points per node. */
    static final int MAX_POINTS = 1 << MEMBER_BITS;

    private final String[] ids;
    private final int[] weights;
    private final InFlight[] inFlight;
    /** Each member's count, read straight from the table's shared arrays: a sum over thousands stays in contiguous memory. */
    private final AtomicIntegerArray[] chunkOf;
    private final int[] slotOf;
    private final long weightSum;
    /** Sorted positions, each with its member's index in the low bits. */
    private final long[] points;
    private final Map<String, Integer> indexOf;

    HashRing(List<Node> members) {
        int n = members.size();
        if (n == 0 || n > MEMBER_MASK) {
            throw new IllegalArgumentException("a ring needs 1 to " + MEMBER_MASK + " members, not " + n);
        }
        ids = new String[n];
        weights = new int[n];
        inFlight = new InFlight[n];
        chunkOf = new AtomicIntegerArray[n];
        slotOf = new int[n];
        indexOf = new HashMap<>(n * 2);
        int lightest = Integer.MAX_VALUE;
        long weightSum = 0;
        for (int i = 0; i < n; i++) {
            Node m = members.get(i);
            ids[i] = m.id();
            weights[i] = Math.max(1, m.weight());
            inFlight[i] = m.inFlight();
            chunkOf[i] = m.inFlight().chunk();
            slotOf[i] = m.inFlight().index();
            indexOf.put(m.id(), i);
            lightest = Math.min(lightest, weights[i]);
            weightSum += weights[i];
        }
        this.weightSum = weightSum;
        double perUnit = Math.min(POINTS_PER_WEIGHT, (double) MAX_POINTS * lightest / weightSum);
        int[] counts = new int[n];
        long total = 0;
        for (int i = 0; i < n; i++) {
            counts[i] = (int) Math.max(1, Math.round(perUnit * weights[i] / lightest));
            total += counts[i];
        }
        points = new long[(int) total];
        int k = 0;
        for (int i = 0; i < n; i++) {
            for (int r = 0; r < counts[i]; r++) {
                long position = KeyHash.mix(new KeyHash().add(ids[i]).add('#').add(Integer.toString(r)).value());
                points[k++] = (position & ~MEMBER_MASK) | i;
            }
        }
        Arrays.sort(points);
    }

    /** Says whether {@code nodes} are this ring's members, in its order, with the same weights and counters. */
    boolean sameMembers(List<Node> nodes) {
        if (nodes.size() != ids.length) {
            return false;
        }
        for (int i = 0; i < ids.length; i++) {
            Node m = nodes.get(i);
            if (!m.id().equals(ids[i]) || Math.max(1, m.weight()) != weights[i] || m.inFlight() != inFlight[i]) {
                return false;
            }
        }
        return true;
    }

    /** Returns a fingerprint of a member list: equal lists have equal fingerprints. */
    static long fingerprint(List<Node> nodes) {
        long h = nodes.size();
        for (int i = 0, n = nodes.size(); i < n; i++) {
            Node m = nodes.get(i);
            h = h * 31 + m.id().hashCode();
            h = h * 31 + m.weight();
        }
        return KeyHash.mix(h);
    }

    /** Returns the members. */
    int members() {
        return ids.length;
    }

    /** Returns the points. */
    int points() {
        return points.length;
    }

    /** Returns the index of the first point at or after {@code key}'s position, wrapping round. */
    int start(long key) {
        long position = key & ~MEMBER_MASK;
        int i = Arrays.binarySearch(points, position);
        if (i < 0) {
            i = -i - 1;
        }
        return i == points.length ? 0 : i;
    }

    /** Returns the member index of the point {@code steps} after {@code start}, wrapping round. */
    int memberAt(int start, int steps) {
        int i = start + steps;
        if (i >= points.length) {
            i %= points.length;
        }
        return (int) (points[i] & MEMBER_MASK);
    }

    /** Returns this scheduler's requests in flight on member {@code i}. */
    int inFlight(int i) {
        return chunkOf[i].get(slotOf[i]);
    }

    /** Rings of more members than this sum their counts at most once per {@link #REFRESH_NANOS}. */
    static final int EXACT_UP_TO = 1024;
    static final long REFRESH_NANOS = 1_000_000;
    private volatile long cachedTotal;
    private volatile long cachedAtNanos;
    private volatile boolean cached;

    /**
     * Returns every member's requests in flight, summed: exactly up to {@value #EXACT_UP_TO} members;
     * above, a sum at most a millisecond old ({@code nowNanos} from the balancer's ticker), since
     * summing ten thousand counts on every pick would cost more than the pick, and a total that large
     * moves a node's bound by well under one request in a millisecond. Racing refreshes are harmless.
     */
    long totalInFlight(long nowNanos) {
        if (slotOf.length > EXACT_UP_TO && cached && nowNanos - cachedAtNanos < REFRESH_NANOS) {
            return cachedTotal;
        }
        long total = 0;
        for (int i = 0; i < slotOf.length; i++) {
            total += chunkOf[i].get(slotOf[i]);
        }
        if (slotOf.length > EXACT_UP_TO) {
            cachedTotal = total;
            cachedAtNanos = nowNanos;
            cached = true;
        }
        return total;
    }

    /** Returns the members' weights, summed. */
    long weightSum() {
        return weightSum;
    }

    /** Returns member {@code i}'s weight as the ring has it (at least 1). */
    int weight(int i) {
        return weights[i];
    }

    /** Returns the member index of the node with {@code id}, or -1. */
    int indexOf(String id) {
        Integer i = indexOf.get(id);
        return i == null ? -1 : i;
    }
}
