package io.heartgate.scheduler.affinity;

/**
 * The 64-bit hash that names affinity keys and places nodes on a ring: FNV-1a over UTF-16 code
 * units, then SplitMix64's finaliser, because FNV alone clusters similar short strings (node ids
 * that differ in one digit) and a ring needs their positions spread evenly. Fed in pieces, so that
 * a prompt is hashed as it is parsed, without building a string of it. Not for security: a caller
 * can aim many keys at one node, and the load bound is what stops that piling up.
 */
public final class KeyHash {

    private static final long OFFSET = 0xcbf29ce484222325L;
    private static final long PRIME = 0x100000001b3L;

    private long h = OFFSET;

    /** Feeds {@code len} characters of {@code chars} from {@code offset}. */
    public KeyHash add(char[] chars, int offset, int len) {
        long x = h;
        for (int i = offset, end = offset + len; i < end; i++) {
            x = (x ^ chars[i]) * PRIME;
        }
        h = x;
        return this;
    }

    /** Feeds every character of {@code text}. */
    public KeyHash add(CharSequence text) {
        long x = h;
        for (int i = 0, n = text.length(); i < n; i++) {
            x = (x ^ text.charAt(i)) * PRIME;
        }
        h = x;
        return this;
    }

    /** Feeds one character (a separator between parts). */
    public KeyHash add(char c) {
        h = (h ^ c) * PRIME;
        return this;
    }

    /** Returns the hash of everything fed. */
    public long value() {
        return mix(h);
    }

    /** Returns the hash of {@code text}. */
    public static long of(CharSequence text) {
        return new KeyHash().add(text).value();
    }

    /** SplitMix64's finaliser: every input bit moves every output bit. */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
