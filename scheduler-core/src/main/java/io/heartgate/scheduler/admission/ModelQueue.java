package io.heartgate.scheduler.admission;

import io.heartgate.scheduler.admission.GatewayQueue.Waiter;
import java.util.List;
import java.util.Optional;

/**
 * One model's waiting requests in the {@link GatewayQueue}: first attempts, and retries apart, since
 * a retry may find every node full that it has not tried yet while first attempts behind it would
 * fit. The two share the model's bound. Guarded by the gateway queue's lock.
 */
final class ModelQueue {
    final int max;
    final FairQueue<Waiter> fresh;
    final FairQueue<Waiter> retries;
    final List<FairQueue<Waiter>> parts;
    /**
     * In the serving pass under way (and after it, until the next): the class of the highest request
     * held back from the reserve; no request of a lower class for this model is served in the pass.
     */
    int heldClass = Integer.MIN_VALUE;

    ModelQueue(int max) {
        this.max = max;
        fresh = new FairQueue<>(max, FairQueue.BURST);
        retries = new FairQueue<>(max); // a node's failure, not a client's parallel calls: no burst
        parts = List.of(fresh, retries);
    }

    boolean isEmpty() {
        return fresh.isEmpty() && retries.isEmpty();
    }

    boolean full() {
        return size() >= max;
    }

    /** Returns the requests waiting, first attempts and retries. */
    int size() {
        return fresh.size() + retries.size();
    }

    /** Returns its depth and longest wait at {@code nowNanos}, or empty when nothing waits. */
    Optional<ModelWait> waitAt(long nowNanos) {
        int n = size();
        if (n == 0) {
            return Optional.empty();
        }
        long oldest = Math.min(fresh.oldestNanos(), retries.oldestNanos());
        return Optional.of(new ModelWait(n, Math.max(0, nowNanos - oldest)));
    }

    /** Returns the part {@code w} joins: first attempts or retries. */
    FairQueue<Waiter> partOf(Waiter w) {
        return w.tried().isEmpty() ? fresh : retries;
    }

    /** Takes out {@code t}, from whichever part holds it; returns whether one did. */
    boolean remove(FairQueue.Ticket<Waiter> t) {
        return fresh.remove(t) || retries.remove(t);
    }
}
