package io.heartgate.scheduler.balancer;

import io.heartgate.protocol.Durations;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.balancer.AffinityBalancer.Choice;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TokenLoad;
import io.heartgate.scheduler.time.Ticker;
import java.time.Duration;
import java.util.List;

/**
 * Sticky until saturated ({@code --affinity-bound wait}, the default): a key's requests go to its
 * home, the node its conversation lives on, while that node has a free slot (its capacity known)
 * or, when its capacity is unknown, while the expected wait of its prefill backlog (the uncached
 * prompt tokens of the requests there not yet at their first token, over its prefill speed; see
 * {@link TokenLoad}) is under {@code --affinity-max-wait}. Otherwise the request goes to the
 * candidate where it would have its first token soonest (backlog and its own uncached tokens over
 * the speed: the home counts only the part of the body beyond the last turn's), and the home
 * moves there: the conversation's next turns follow. A key with no home yet takes the first node
 * after it on the ring, by the same test. Low load never moves a key: an idle node has a free slot
 * and no backlog. Homes are kept per key and model.
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
            throw new InvalidSettingException("affinityMaxWait", "must be 0s to 10m, was " + Durations.format(maxWait));
        }
        this.maxWaitSeconds = maxWait.toNanos() / 1e9;
        this.homes = homes;
        this.ticker = ticker;
    }

    /**
     * Picks for {@code key}, a request of {@code bytes} of body for {@code model}, on {@code ring}
     * (of {@code base}) among the members {@code mask} allows ({@code null}: all); {@code null} when
     * none is allowed. The key's own node (the choice's owner) is its home, or with none yet its
     * first node on the ring; when that node is set aside for this request, the first allowed node
     * after the key stands in for it, and the request is a spill wherever it goes.
     */
    Choice pick(HashRing ring, List<Node> base, boolean[] mask, long key, long bytes, String model) {
        int start = ring.start(key);
        KeyHomes.Home h = homes.get(homeKey(key, model), ticker.nanos());
        int own = h == null ? -1 : ring.indexOf(h.nodeId());
        if (own < 0) {
            own = ring.memberAt(start, 0);
            h = null;
        }
        Node owner = base.get(own);
        boolean ownerAllowed = mask == null || mask[own];
        int home = ownerAllowed ? own : firstAllowed(ring, start, mask);
        if (home < 0) {
            return null;
        }
        Node homeNode = base.get(home);
        // The home holds the last request's body when this one extends it; a shorter body is another conversation.
        long homeBytes = h != null && home == own && bytes >= h.bytes() ? bytes - h.bytes() : bytes;
        if (homeNode.hasRoom() && (homeNode.capacity() > 0 || backlogWait(homeNode, model) < maxWaitSeconds)) {
            return new Choice(homeNode, owner, false, homeBytes);
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
            return new Choice(homeNode, owner, false, homeBytes); // every node full: the claim fails, the request waits
        }
        return new Choice(best, owner, ownerAllowed && best != owner, best == homeNode ? homeBytes : bytes);
    }

    /**
     * The request of {@code bytes} for {@code key} and {@code model} took a slot on {@code node}:
     * that is the conversation's home now. Only then, so that a pick whose slot went to another
     * event loop first leaves the home where the body is.
     */
    void settle(long key, String model, Node node, long bytes) {
        homes.put(homeKey(key, model), node.id(), bytes, ticker.nanos());
    }

    /** Returns the key a conversation's home is kept under: its affinity key for {@code model}, so that its requests to another model keep their own. */
    private static long homeKey(long key, String model) {
        return model == null ? key : KeyHash.mix(key ^ KeyHash.of(model));
    }

    /** Returns the expected seconds until the node's prefill backlog is done: the wait a request finds there. */
    static double backlogWait(Node n, String model) {
        TokenLoad t = n.inFlight().tokens();
        return t.waitSeconds(0, t.tps(model, n.heartbeat().load().prefillTps()));
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
