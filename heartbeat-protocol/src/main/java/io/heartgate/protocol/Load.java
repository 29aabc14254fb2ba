package io.heartgate.protocol;

/**
 * Holds the load figures a node reports; each is {@code null} when the backend does not expose it.
 *
 * @param inFlight requests the server is working on now, or {@code null}
 * @param queued requests waiting for a slot, or {@code null}
 * @param kvCacheUsage fraction of the KV cache in use, 0 to 1, or {@code null}
 */
public record Load(Integer inFlight, Integer queued, Double kvCacheUsage) {

    /** A load with no figures at all. */
    public static final Load UNKNOWN = new Load(null, null, null);

    /** Returns whether no figure is known. */
    public boolean isUnknown() {
        return inFlight == null && queued == null && kvCacheUsage == null;
    }
}
