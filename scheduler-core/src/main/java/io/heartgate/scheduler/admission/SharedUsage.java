package io.heartgate.scheduler.admission;

/**
 * Where {@link RateLimits} reports what this replica granted and charged, so that the other
 * replicas debit the same key's buckets: requests taken (or given back, negative) and tokens
 * charged, by key name. Called on the request path: an implementation only adds to counters that
 * are published elsewhere, never waits.
 */
@FunctionalInterface
public interface SharedUsage {

    /** Reports nothing: a replica on its own. */
    SharedUsage NONE = (key, requests, tokens) -> { };

    /** Notes that the key named {@code key} took {@code requests} request tokens and used {@code tokens} tokens. */
    void used(String key, long requests, long tokens);
}
