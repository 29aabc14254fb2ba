package io.heartgate.scheduler.balancer;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.balancer.AffinityBalancer.Choice;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TokenLoad;
import io.heartgate.scheduler.time.Ticker;
import java.time.Duration;
import java.util.List;

/**
 * Sticky until saturated ({@code --affinity-bound wait}, the default): a key's requests go to its
 * home, the node its conversation lives on, while that node has a free slot (its capacity known)
 * or, when its capacity is unknown, while the expected wait for this request's prefill there (the
 * node's prefill backlog and the request's uncached tokens, over its prefill speed; see
 * {@link TokenLoad}) is under {@code --affinity-max-wait}. Otherwise the request goes to the
 * candidate with the least expected wait, the home included with only its uncached part, and the
 * home moves there: the conversation's next turns follow. A key with no home yet takes the first
 * node after it on the ring, as the bounded-load rule does, by the same test. Low load never moves
 * a key: an idle node has a free slot and no backlog.
 *
 * <p>The search for the least wait reads at most {@value #MAX_SCAN} candidates, from the home
 * onward in the ring's member order, so that a pick at 10,000 nodes costs what it does at 32.
 * Thread-safe; the common pick (home with room) allocates one small home entry.
 */
final class StickyRule {

    /** The most candidates a saturated home's request compares. */
    static final int MAX_SCAN = 32;
    /** Ring points walked for a key's first allowed node before the members are scanned in order. */
    private static final int MAX_WALK = 1024;

    private final double maxWaitSeconds;
    private final KeyHomes homes;
    private final Ticker ticker;

    /**
     * @throws InvalidSettingException for {@code affinity-max-wait} unless 0 to 10 minutes
     */
    StickyRule(Duration maxWait, KeyHomes homes, Ticker ticker) {
        if (maxWait.isNegative() || maxWait.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new InvalidSettingException("affinityMaxWait", "must be 0s to 10m, was " + maxWait);
        }
        this.maxWaitSeconds = maxWait.toNanos() / 1e9;
        this.homes = homes;
        this.ticker = ticker;
    }

    /**
     * Picks for {@code key}, a request of {@code bytes} of body for {@code model}, on {@code ring}
     * (of {@code base}) among the members {@code mask} allows ({@code null}: all); {@code null} when
     * none is allowed.
     */
    Choice pick(HashRing ring, List<Node> base, boolean[] mask, long key, long bytes, String model) {
        long now = ticker.nanos();
        int start = ring.start(key);
        KeyHomes.Home h = homes.get(key, now);
        int home = h == null ? -1 : ring.indexOf(h.nodeId());
        if (home < 0 || mask != null && !mask[home]) {
            home = firstAllowed(ring, start, mask);
            if (home < 0) {
                return null;
            }
        }
        Node homeNode = base.get(home);
        long homeBytes = h != null && h.nodeId().equals(homeNode.id()) ? bytes - Math.min(h.bytes(), bytes) : bytes;
        if (homeNode.hasRoom() && (homeNode.capacity() > 0 || wait(homeNode, homeBytes, model) < maxWaitSeconds)) {
            homes.put(key, homeNode.id(), bytes, now);
            return new Choice(homeNode, homeNode, false, homeBytes);
        }
        Node best = null;
        double bestWait = Double.MAX_VALUE;
        int members = ring.members();
        for (int i = 0, scanned = 0; i < members && scanned < MAX_SCAN; i++) {
            int m = home + i < members ? home + i : home + i - members;
            if (mask != null && !mask[m]) {
                continue;
            }
            scanned++;
            Node c = base.get(m);
            if (!c.hasRoom()) {
                continue;
            }
            double w = wait(c, m == home ? homeBytes : bytes, model);
            if (w < bestWait || w == bestWait && decoding(c) < decoding(best)) {
                best = c;
                bestWait = w;
            }
        }
        if (best == null) {
            return new Choice(homeNode, homeNode, false, homeBytes); // every node full: the claim fails, the request waits
        }
        homes.put(key, best.id(), bytes, now);
        return new Choice(best, homeNode, best != homeNode, best == homeNode ? homeBytes : bytes);
    }

    /** Returns the expected seconds until the prefill of {@code ownBytes} of uncached body on {@code n} is done. */
    static double wait(Node n, long ownBytes, String model) {
        TokenLoad t = n.inFlight().tokens();
        return t.waitSeconds(t.tokens(ownBytes), t.tps(model, n.heartbeat().load().prefillTps()));
    }

    /** Returns the node's requests past their first token, or the most there can be for {@code null}. */
    private static int decoding(Node n) {
        return n == null ? Integer.MAX_VALUE : n.inFlight().get() - n.inFlight().tokens().prefilling();
    }

    /** Returns the first member after {@code start} on the ring that {@code mask} allows, or -1. */
    private static int firstAllowed(HashRing ring, int start, boolean[] mask) {
        if (mask == null) {
            return ring.memberAt(start, 0);
        }
        int walk = Math.min(MAX_WALK, ring.points());
        for (int s = 0; s < walk; s++) {
            int m = ring.memberAt(start, s);
            if (mask[m]) {
                return m;
            }
        }
        for (int m = 0; m < ring.members(); m++) {
            if (mask[m]) {
                return m;
            }
        }
        return -1;
    }

    /** Returns the wait limit in seconds. */
    double maxWaitSeconds() {
        return maxWaitSeconds;
    }
}
