package io.heartgate.scheduler.admission;

import io.heartgate.scheduler.admission.GatewayQueue.Waiter;
import io.heartgate.scheduler.proxy.policy.FreeSlots;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway queue's reserve ({@code --reserve-slots N}): the last {@code N} free slots of a
 * model's nodes are kept for callers that are not flooding it. A first attempt whose caller has more
 * than a burst ({@link FairQueue#BURST}) of first attempts waiting for the model stays queued while
 * {@code N} or fewer are free, and requests of its class or a higher one from other callers go
 * instead. Without preemption, a caller below its share otherwise waits for the next slot that frees
 * however it is ordered; the reserve trades the flooding callers' throughput (slots held idle) for
 * the others' time to first token. A reserve as large as a model's slots in all leaves one to the
 * flood, so a model with few slots is never shut to it. Retries are never held back. Zero: every
 * free slot is used. Asked under the queue's lock only.
 */
final class Reserve {

    private static final Logger log = LoggerFactory.getLogger(Reserve.class);

    private final int slots;
    private final Function<Waiter, FreeSlots> freeSlots;

    /**
     * @param slots free slots a flooding caller's request may not take; 0 for none
     * @param freeSlots the slots, free and in all, on the nodes a waiting request may go to now
     */
    Reserve(int slots, Function<Waiter, FreeSlots> freeSlots) {
        if (slots < 0) {
            throw new IllegalArgumentException("reserveSlots must not be negative, was " + slots);
        }
        this.slots = slots;
        this.freeSlots = freeSlots;
    }

    /**
     * Says whether {@code w} is held back: a first attempt whose caller has {@code callersWaiting}
     * first attempts (itself included) waiting for the model, more than a burst, while no more than
     * the reserved slots are free.
     */
    boolean holdsBack(Waiter w, int callersWaiting) {
        if (slots == 0 || !w.tried().isEmpty() || callersWaiting <= FairQueue.BURST) {
            return false;
        }
        try {
            FreeSlots now = freeSlots.apply(w);
            return now.free() <= Math.min(slots, now.total() - 1);
        } catch (RuntimeException e) {
            log.warn("Gateway queue could not count a model's free slots; not holding back", e);
            return false;
        }
    }
}
