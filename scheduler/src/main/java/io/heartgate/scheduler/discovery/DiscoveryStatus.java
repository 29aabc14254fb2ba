package io.heartgate.scheduler.discovery;

import io.heartgate.scheduler.status.DiscoveryView;
import java.time.Instant;

/**
 * Tells where discovery stands, for {@code /readyz} and the logs.
 *
 * @param caughtUp the start-up catch-up with the topic is done
 * @param selfPreservation expiry is frozen because Kafka could not be reached
 * @param lastContact when Kafka last answered, or {@code Instant.MIN}
 * @param lag records behind the end of the topic at the last check, or -1 when unknown
 * @param fatal why discovery stopped for good, or {@code null} while it runs
 * @param refused why Kafka refuses discovery's credentials now, or {@code null}; it keeps trying
 */
public record DiscoveryStatus(boolean caughtUp, boolean selfPreservation, Instant lastContact, long lag,
                              String fatal, String refused) implements DiscoveryView {

    /** The status before the loop starts. */
    public static final DiscoveryStatus STARTING = new DiscoveryStatus(false, false, Instant.MIN, -1, null, null);
}
