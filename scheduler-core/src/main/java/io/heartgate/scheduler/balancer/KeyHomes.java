package io.heartgate.scheduler.balancer;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Where each affinity key's conversation lives: the node its last request went to, and how large
 * that request's body was (the part of the next one the node holds in its prefix cache). A
 * two-way set-associative table of fixed size: a key goes to one of two neighbouring slots, the
 * one it holds or else the one written longer ago; a key pushed out by two others, or not seen for
 * {@code ttlNanos}, has no home, and is placed on the ring again. Bounded whatever the number of
 * keys; a look-up is two array reads and allocates nothing. Thread-safe: a slot holds an immutable
 * entry, and two event loops writing one slot at once leave one of the two, either of which is
 * a right answer.
 */
public final class KeyHomes {

    /** One key's home. */
    record Home(long key, String nodeId, long bytes, long atNanos) {
    }

    /** Told of homes the other replicas should know: new ones, moved ones, and each again every {@link #SHARE_AGAIN}. */
    @FunctionalInterface
    public interface Listener {
        /** Nobody listens: a replica on its own. */
        Listener NONE = (key, nodeId, bytes) -> { };

        /** Says that {@code key}'s conversation lives on {@code nodeId}, its last request {@code bytes} long. */
        void placed(long key, String nodeId, long bytes);
    }

    /**
     * How often a home that stays put is told again: the other replicas' copies would otherwise
     * expire {@link #DEFAULT_TTL} after they learnt it, however busy the conversation is here. A home
     * is told again by the first request after each multiple of this on the ticker, so nothing more
     * is kept per home.
     */
    public static final Duration SHARE_AGAIN = Duration.ofMinutes(10);

    /** The default size: 2^17 = 131,072 homes, some 7 MiB once every slot is written. */
    public static final int DEFAULT_BITS = 17;
    /** The default time a home outlives its key's last request: an hour, as a prefix cache outlives a pause rarely longer. */
    public static final Duration DEFAULT_TTL = Duration.ofHours(1);

    private final AtomicReferenceArray<Home> slots;
    private final int mask;
    private final long ttlNanos;
    private volatile Listener listener = Listener.NONE;

    /**
     * Creates a table of {@code 2^bits} slots whose homes last {@code ttlNanos} after their key's last request.
     *
     * @throws IllegalArgumentException unless {@code bits} is 4 to 24 and {@code ttlNanos} positive
     */
    public KeyHomes(int bits, long ttlNanos) {
        if (bits < 4 || bits > 24 || ttlNanos <= 0) {
            throw new IllegalArgumentException("bits must be 4 to 24 and the TTL positive: " + bits + ", " + ttlNanos);
        }
        this.slots = new AtomicReferenceArray<>(1 << bits);
        this.mask = (1 << bits) - 1;
        this.ttlNanos = ttlNanos;
    }

    /** Creates a table of the default size and time to live. */
    public KeyHomes() {
        this(DEFAULT_BITS, DEFAULT_TTL.toNanos());
    }

    /** Returns {@code key}'s home at {@code nowNanos}, or {@code null} when it has none. */
    Home get(long key, long nowNanos) {
        int i = index(key);
        Home h = slots.get(i);
        if (h == null || h.key != key) {
            h = slots.get(i ^ 1);
        }
        return h != null && h.key == key && nowNanos - h.atNanos < ttlNanos ? h : null;
    }

    /** Sets who is told of homes worth sharing; set once, when the replica is wired. */
    public void share(Listener to) {
        this.listener = to;
    }

    /**
     * Notes that {@code key}'s request of {@code bytes} went to {@code nodeId} at {@code nowNanos},
     * and tells the listener when the home is new, moved, or its last request was before the latest
     * multiple of {@link #SHARE_AGAIN}.
     */
    void put(long key, String nodeId, long bytes, long nowNanos) {
        int slot = slotFor(key);
        Home old = slots.get(slot);
        long period = SHARE_AGAIN.toNanos();
        boolean same = old != null && old.key == key && old.nodeId.equals(nodeId)
                && nowNanos - old.atNanos < ttlNanos && Math.floorDiv(nowNanos, period) == Math.floorDiv(old.atNanos, period);
        slots.set(slot, new Home(key, nodeId, bytes, nowNanos));
        if (!same) {
            listener.placed(key, nodeId, bytes);
        }
    }

    /**
     * Takes a home another replica placed, learnt {@code ageNanos} after it did, without telling it
     * back; it lasts as long as one placed here would have.
     */
    public void adopt(long key, String nodeId, long bytes, long nowNanos, long ageNanos) {
        long at = nowNanos - Math.max(0, ageNanos);
        if (nowNanos - at >= ttlNanos) {
            return;
        }
        slots.set(slotFor(key), new Home(key, nodeId, bytes, at));
    }

    private int slotFor(long key) {
        int i = index(key);
        Home a = slots.get(i);
        Home b = slots.get(i ^ 1);
        return a != null && a.key == key ? i
                : b != null && b.key == key ? i ^ 1
                : a == null ? i
                : b == null || b.atNanos < a.atNanos ? i ^ 1 : i;
    }

    /** Returns how many slots the table has. */
    public int capacity() {
        return slots.length();
    }

    /** Returns the first of the two slots {@code key} may take (the other is this one with its last bit flipped). */
    int index(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 40) & mask;
    }
}
