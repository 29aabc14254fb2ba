package io.heartgate.scheduler.usage;

import java.util.Map;

/** Tells what the proxy relayed, for the dashboard. Read-only and thread-safe. */
public interface TrafficView {

    /** Returns the requests relayed to {@code nodeId} so far. */
    long requests(String nodeId);

    /** Returns the requests to {@code nodeId} that ended in a 5xx or were cut. */
    long errors(String nodeId);

    /** Returns every request relayed to any node so far. */
    long totalRequests();

    /** Returns the median time to first byte over the last half minute, in ms, or NaN. */
    double firstByteMedianMs();

    /** Returns the requests and tokens counted per API key ("" for callers without one), by name. */
    default Map<String, UsageAccounting.KeyTotals> keyTotals() {
        return Map.of();
    }

    /**
     * Returns the responses the affinity strategy placed, by result ({@code hit}, {@code spill},
     * {@code none}); empty under another strategy.
     */
    default Map<String, Long> affinity() {
        return Map.of();
    }
}
