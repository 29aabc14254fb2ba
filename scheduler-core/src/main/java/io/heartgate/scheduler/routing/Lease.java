package io.heartgate.scheduler.routing;

import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TokenLoad;

/**
 * One request's hold on its node: the one owner of the request's in-flight count there, and of its
 * count as a request waiting for the node to load its model (warm first). Taken when routing
 * chooses the node, so that no node is ever sent more than its capacity by this scheduler; given
 * back exactly once ({@link #release}), however many paths (the answer's end, a failure, a client
 * gone, a queue whose loop shut down) reach it. It also holds the request's place in the node's
 * prefill backlog ({@link TokenLoad}) from when it is sent to its first token, and is the sample
 * of the node's prefill speed that first token gives. A model-management call holds its node without a
 * count: it works the node's disk and network, not a generation slot. Created on any thread;
 * released on the request's event loop, or on the thread that created it when the request never
 * reached its loop.
 */
public final class Lease {

    private final Node node;
    private final boolean counted;
    private final boolean bounded;
    private String loading;
    private boolean released;
    /** The request's place in the node's prefill backlog, made only under a rule that reads it; else {@code null}. */
    private Prefill prefill;

    /** A request's uncached prompt tokens in its node's backlog (0 once out), the backlog ahead of it, its model, when sent. */
    private static final class Prefill {
        long tokens;
        final long ahead;
        final String model;
        long sentNanos;

        Prefill(long tokens, long ahead, String model) {
            this.tokens = tokens;
            this.ahead = ahead;
            this.model = model;
        }
    }

    private Lease(Node node, boolean counted) {
        this.node = node;
        this.counted = counted;
        this.bounded = counted && node.capacity() > 0;
    }

    /**
     * Takes one of {@code node}'s slots: atomically under its limit when its capacity is known
     * (returns {@code null} when it is full, or another event loop took the last slot first), else
     * unconditionally, since a node of unknown capacity always has room.
     */
    public static Lease take(Node node) {
        if (node.capacity() == 0) {
            node.inFlight().increment();
            return new Lease(node, true);
        }
        return node.inFlight().tryIncrement(node.limit()) ? new Lease(node, true) : null;
    }

    /** Holds {@code node} for a call that takes none of its slots (a model-management call). */
    public static Lease uncounted(Node node) {
        return new Lease(node, false);
    }

    /** Returns the node held. */
    public Node node() {
        return node;
    }

    /** Says whether this lease holds one of the node's slots of known capacity: one the gateway queue can use once given back. */
    public boolean bounded() {
        return bounded;
    }

    /**
     * Counts the request as waiting for the node to load {@code model} (warm first), until the lease
     * is released; nothing for {@code null} or an uncounted lease.
     */
    public void loading(String model) {
        if (model != null && counted && !released && loading == null) {
            loading = model;
            node.inFlight().loading(model, 1);
        }
    }

    /**
     * Puts the request's {@code tokens} uncached prompt tokens for {@code model} (normalised, or
     * {@code null}) in the node's prefill backlog, until its first token or the release; once, and
     * only for a counted lease.
     */
    public void prefill(long tokens, String model) {
        if (counted && !released && prefill == null && tokens > 0) {
            prefill = new Prefill(tokens, node.inFlight().tokens().sent(tokens), model);
        }
    }

    /** Returns the request's uncached prompt tokens in the node's backlog, or 0 once out of it (or never in). */
    public long prefill() {
        return prefill == null ? 0 : prefill.tokens;
    }

    /** The request went to the node at {@code nanos} (monotonic): its first token's wait counts from here. */
    public void sent(long nanos) {
        if (prefill != null) {
            prefill.sentNanos = nanos;
        }
    }

    /**
     * The request's first token came at {@code nanos}: it leaves the node's prefill backlog and, when
     * {@code learn} (a stream, whose first chunk is its first token), the wait teaches the node's speed.
     */
    public void firstToken(long nanos, boolean learn) {
        Prefill p = prefill;
        if (p == null || p.tokens == 0) {
            return;
        }
        TokenLoad tokens = node.inFlight().tokens();
        tokens.prefilled(p.tokens);
        if (learn && p.sentNanos != 0) {
            tokens.firstToken(p.model, p.ahead, p.tokens, nanos - p.sentNanos);
        }
        p.tokens = 0;
    }

    /** Returns the model the node was cold for when the request was sent (warm first), or {@code null}. */
    public String loading() {
        return loading;
    }

    /** Says whether the lease was given back. */
    public boolean released() {
        return released;
    }

    /**
     * Gives back what the lease holds; only the first call does anything. Returns whether that call
     * freed a slot of known capacity, which a request in the gateway queue may then take.
     */
    public boolean release() {
        if (released) {
            return false;
        }
        released = true;
        if (prefill != null && prefill.tokens != 0) {
            node.inFlight().tokens().prefilled(prefill.tokens);
            prefill.tokens = 0;
        }
        if (counted) {
            node.inFlight().decrement();
            if (loading != null) {
                node.inFlight().loading(loading, -1);
            }
        }
        return bounded;
    }
}
