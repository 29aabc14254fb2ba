package io.heartgate.scheduler.proxy.policy;

/**
 * A message's headers as the header policy sees them: case-insensitive names, one value per name
 * as far as the policy cares. The relay adapts Netty's headers to it; tests use a plain map.
 */
public interface Headers {

    /** Returns the first value of {@code name}, or {@code null}. */
    String get(CharSequence name);

    /** Returns whether {@code name} is present. */
    boolean contains(CharSequence name);

    /** Replaces every value of {@code name} with {@code value}. */
    void set(CharSequence name, String value);

    /** Removes every value of {@code name}; nothing when absent. */
    void remove(CharSequence name);
}
