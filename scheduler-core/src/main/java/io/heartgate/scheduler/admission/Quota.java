package io.heartgate.scheduler.admission;

/**
 * What {@link RateLimits} holds a caller to: its name and its requests and tokens per minute, 0 for
 * no limit. An API key is one; admission never needs to know where keys come from.
 */
public interface Quota {

    /** Returns the caller's name: the key its buckets are kept under. */
    String name();

    /** Returns the requests per minute it may send ({@code rpm=}), 0 for no limit. */
    long rpm();

    /** Returns the tokens per minute it may use ({@code tpm=}), 0 for no limit. */
    long tpm();

    /** Says whether the caller has a request or token limit. */
    default boolean limited() {
        return rpm() > 0 || tpm() > 0;
    }
}
