package io.heartgate.scheduler.admission;

import io.heartgate.scheduler.admission.GatewayQueue.Waiter;
import io.heartgate.scheduler.routing.FreeSlots;
import io.heartgate.scheduler.time.Ticker;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
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
 * the others' time to first token.
 *
 * <p>Slots are held only for someone who could use them: while another caller of the flood's class
 * or a higher one, not flooding it now, has had a first attempt for the model reach the queue within
 * the last {@link #PRESENCE} (a flood alone on the fleet, beside other floods, or beside lower classes
 * only, which may never take what it is held back from, gets every slot). A reserve as large as a model's slots in all leaves
 * one to the flood, so a model with few slots is never shut to it. Retries are never held back.
 * Zero: every free slot is used, and nothing is recorded. Used under the queue's lock only.
 */
final class Reserve {

    /** How long a caller that does not flood a model counts as present after its last request for it. */
    static final Duration PRESENCE = Duration.ofSeconds(60);
    /** Past this many models remembered, the ones with no caller present are forgotten. */
    private static final int MODELS_BEFORE_PRUNING = 256;

    private static final Logger log = LoggerFactory.getLogger(Reserve.class);

    private final int slots;
    private final Function<Waiter, FreeSlots> freeSlots;
    private final Ticker ticker;
    private final long presenceNanos = PRESENCE.toNanos();
    /** Per model, per priority class: the callers not flooding it that came lately. */
    private final Map<String, TreeMap<Integer, Arrivals>> present = new HashMap<>();

    /**
     * @param slots free slots a flooding caller's request may not take; 0 for none
     * @param freeSlots the slots, free and in all, on the nodes a waiting request may go to now
     * @param ticker the monotonic clock presence is measured on
     */
    Reserve(int slots, Function<Waiter, FreeSlots> freeSlots, Ticker ticker) {
        if (slots < 0) {
            throw new IllegalArgumentException("reserveSlots must not be negative, was " + slots);
        }
        this.slots = slots;
        this.freeSlots = freeSlots;
        this.ticker = ticker;
    }

    /**
     * {@code w} of {@code caller} in class {@code priority} reached the queue now, not yet in {@code
     * fresh}, its model's first attempts: a first attempt of a caller within a burst, counting this
     * one, makes the caller present for the model.
     */
    void arrived(Waiter w, String caller, int priority, FairQueue<Waiter> fresh) {
        if (slots == 0 || !w.tried().isEmpty() || fresh.waitingOf(caller, priority) + 1 > FairQueue.BURST) {
            return;
        }
        String model = GatewayQueue.key(w.facts().model());
        long nowNanos = ticker.nanos();
        if (present.size() >= MODELS_BEFORE_PRUNING && !present.containsKey(model)) {
            present.values().removeIf(byClass -> {
                byClass.values().forEach(a -> a.forget(nowNanos, presenceNanos));
                return byClass.values().stream().allMatch(a -> a.lastSeen.isEmpty());
            });
        }
        Arrivals arrivals = present.computeIfAbsent(model, m -> new TreeMap<>()).computeIfAbsent(priority, p -> new Arrivals());
        arrivals.forget(nowNanos, presenceNanos);
        arrivals.note(caller, nowNanos);
    }

    /**
     * Says whether {@code w} is held back now: a first attempt whose caller has
     * {@code callersWaiting} first attempts (itself included) waiting in {@code fresh}, the model's
     * first attempts, more than a burst, while no more than the reserved slots are free and another
     * caller who could take them is present.
     */
    boolean holdsBack(Waiter w, String caller, int priority, int callersWaiting, FairQueue<Waiter> fresh) {
        if (slots == 0 || !w.tried().isEmpty() || callersWaiting <= FairQueue.BURST
                || !othersPresent(GatewayQueue.key(w.facts().model()), caller, priority, fresh)) {
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

    /**
     * Says whether a caller other than {@code caller}, of class {@code priority} or higher, came for
     * {@code model} lately and is not flooding it now (one that is would be held back too).
     */
    private boolean othersPresent(String model, String caller, int priority, FairQueue<Waiter> fresh) {
        TreeMap<Integer, Arrivals> byClass = present.get(model);
        if (byClass == null) {
            return false;
        }
        long now = ticker.nanos();
        for (Map.Entry<Integer, Arrivals> e : byClass.tailMap(priority, true).entrySet()) {
            int cls = e.getKey();
            Arrivals arrivals = e.getValue();
            arrivals.forget(now, presenceNanos);
            for (String other : arrivals.lastSeen.keySet()) {
                if (!other.equals(caller) && fresh.waitingOf(other, cls) <= FairQueue.BURST) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The callers of one class that came within the presence window, by the time each last came,
     * oldest first: at most the callers of the last minute.
     */
    private static final class Arrivals {
        final LinkedHashMap<String, Long> lastSeen = new LinkedHashMap<>();

        void note(String caller, long at) {
            lastSeen.remove(caller); // to the end: the map stays in the order of last arrival
            lastSeen.put(caller, at);
        }

        /** Drops the callers last seen more than {@code window} before {@code now}. */
        void forget(long now, long window) {
            Iterator<Long> oldestFirst = lastSeen.values().iterator();
            while (oldestFirst.hasNext() && now - oldestFirst.next() > window) {
                oldestFirst.remove();
            }
        }
    }
}
