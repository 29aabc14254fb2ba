package io.heartgate.scheduler.admission;

import io.heartgate.protocol.Durations;
import io.heartgate.scheduler.admission.GatewayQueue.Waiter;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a request leaves the {@link GatewayQueue}, once the queue has decided: its outcome handed to
 * its waiter, counted ({@link QueueMeters}) and, for the waits that say how long the queue takes,
 * added to the {@code Retry-After} mean ({@link RecentWait}). A waiter whose event loop refuses its
 * outcome (shutting down) is logged, never passed on. Called under the queue's lock.
 */
final class QueueExits {

    private static final Logger log = LoggerFactory.getLogger(QueueExits.class);

    private final QueueMeters meters;
    private final RecentWait recentWait;
    private final String timeoutText;

    /**
     * @param registry where the queue's meters go
     * @param queue the queue, for its depth gauge
     * @param timeout the queue's wait limit, for the timeout's message and the longest {@code Retry-After}
     */
    QueueExits(MeterRegistry registry, GatewayQueue queue, Duration timeout) {
        this.meters = new QueueMeters(registry, queue);
        this.recentWait = new RecentWait(timeout);
        this.timeoutText = Durations.format(timeout);
    }

    /** {@code w} goes to {@code to} after waiting {@code waitedNanos}; its slot is given back if its loop is gone. */
    void served(Waiter w, Route.To to, long waitedNanos) {
        meters.left(meters.served, waitedNanos);
        recentWait.note(waitedNanos);
        if (!safely(() -> w.routed(to))) {
            to.lease().release(); // its loop is gone (shutting down): the slot goes to the next one
        }
    }

    /** Every node for {@code w}'s model went away while it waited: it is answered {@code refusal}. */
    void refused(Waiter w, Route.Refused refusal, long waitedNanos) {
        meters.left(meters.refused, waitedNanos);
        safely(() -> w.refused(refusal));
    }

    /** {@code w} waited the whole wait limit: 503 {@code overloaded}. */
    void expired(Waiter w, long waitedNanos) {
        meters.left(meters.expired, waitedNanos);
        recentWait.note(waitedNanos);
        int retryAfter = retryAfterSeconds();
        safely(() -> w.overloaded("no node serving the model had a free slot within the queue timeout ("
                + timeoutText + ")", retryAfter));
    }

    /** {@code w} was taken out of a full queue to make room for a newcomer: 503 {@code overloaded}. */
    void pushedOut(Waiter w, long waitedNanos) {
        meters.left(meters.pushedOut, waitedNanos);
        int retryAfter = retryAfterSeconds();
        RequestFacts facts = w.facts();
        String what = facts.model() == null ? "requests without a model" : "model '" + facts.displayModel() + "'";
        safely(() -> w.overloaded("the gateway queue for " + what + " is full, and a request of a higher"
                + " priority class or of a caller with fewer requests waiting took this one's place", retryAfter));
    }

    /** A waiting request's client hung up after {@code waitedNanos}. */
    void gone(long waitedNanos) {
        meters.left(meters.gone, waitedNanos);
    }

    /** A full queue refused a request at once. */
    void rejected() {
        meters.rejected();
    }

    /** Returns the seconds a client is told to wait before trying again ({@link RecentWait#retryAfterSeconds()}). */
    int retryAfterSeconds() {
        return recentWait.retryAfterSeconds();
    }

    /** Runs a waiter's callback; returns whether it took it. */
    private static boolean safely(Runnable callback) {
        try {
            callback.run();
            return true;
        } catch (RuntimeException e) {
            log.debug("A waiting request's event loop refused its outcome: {}", e.toString());
            return false;
        }
    }
}
