package io.heartgate.scheduler.status;

import java.time.Instant;

/** Tells where heartbeat discovery stands, for readiness and the dashboard. Immutable. */
public interface DiscoveryView {

    /** Returns whether the start-up catch-up with the heartbeat topic is done. */
    boolean caughtUp();

    /** Returns whether expiry is frozen because Kafka cannot be reached. */
    boolean selfPreservation();

    /** Returns the records behind the end of the topic, -1 when unknown. */
    long lag();

    /** Returns when Kafka last answered: {@code null} or {@link Instant#MIN} when never. */
    Instant lastContact();

    /** Returns why discovery stopped for good, or {@code null} while it runs. */
    String fatal();

    /** Returns why Kafka refuses discovery now (its credentials), or {@code null}; discovery keeps trying. */
    default String refused() {
        return null;
    }
}
