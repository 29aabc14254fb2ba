package io.heartgate.scheduler.replicas;

import io.heartgate.scheduler.admission.SharedUsage;
import io.heartgate.scheduler.balancer.KeyHomes;
import io.heartgate.scheduler.health.FlapDamping;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.replicas.GatewayEvent.Debit;
import io.heartgate.scheduler.routing.ResponseHomes;
import io.heartgate.scheduler.status.Ejection;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * What this replica has to tell the others, gathered where it happens (the event loops, passive
 * health, flap damping, the affinity homes) without waiting on anything: usage is added to per-key counters that
 * the publisher empties every report, each other event is put in a bounded queue the publisher
 * sends from. A full queue drops the event and counts it; nothing here touches Kafka.
 */
final class Outbox implements SharedUsage, PassiveHealth.Listener, FlapDamping.Listener, KeyHomes.Listener,
        ResponseHomes.Listener {

    /** The most events waiting for the publisher; past it they are dropped and counted. */
    static final int CAPACITY = 10_000;

    private static final class Tally {
        final AtomicLong requests = new AtomicLong();
        final AtomicLong tokens = new AtomicLong();
    }

    private final String replica;
    private final Clock clock;
    private final Map<String, Tally> usage = new ConcurrentHashMap<>();
    private final BlockingQueue<GatewayEvent> events = new ArrayBlockingQueue<>(CAPACITY);
    private final LongAdder dropped = new LongAdder();

    Outbox(String replica, Clock clock) {
        this.replica = replica;
        this.clock = clock;
    }

    @Override
    public void used(String key, long requests, long tokens) {
        Tally t = usage.get(key);
        if (t == null) {
            t = usage.computeIfAbsent(key, k -> new Tally());
        }
        if (requests != 0) {
            t.requests.addAndGet(requests);
        }
        if (tokens != 0) {
            t.tokens.addAndGet(tokens);
        }
    }

    @Override
    public void ejected(String nodeId, Ejection ejection) {
        offer(new GatewayEvent.Ejected(replica, clock.millis(), nodeId, ejection.until().toEpochMilli(),
                ejection.consecutiveFailures(), ejection.reason()));
    }

    @Override
    public void held(String nodeId, Ejection hold) {
        offer(new GatewayEvent.Held(replica, clock.millis(), nodeId, hold.until().toEpochMilli(), hold.reason()));
    }

    @Override
    public void readmitted(String nodeId) {
        offer(new GatewayEvent.Readmitted(replica, clock.millis(), nodeId));
    }

    @Override
    public void placed(long key, String nodeId, long bytes) {
        offer(new GatewayEvent.Placed(replica, clock.millis(), GatewayEvent.Placed.Kind.SESSION,
                Long.toHexString(key), nodeId, bytes));
    }

    @Override
    public void placed(String id, String nodeId) {
        offer(new GatewayEvent.Placed(replica, clock.millis(), GatewayEvent.Placed.Kind.RESPONSE, id, nodeId, 0));
    }

    private void offer(GatewayEvent e) {
        if (!events.offer(e)) {
            dropped.increment();
        }
    }

    /** Returns the next event, waiting up to {@code waitMs}; {@code null} when none came. */
    GatewayEvent next(long waitMs) throws InterruptedException {
        return events.poll(waitMs, TimeUnit.MILLISECONDS);
    }

    /** Returns the next event without waiting, or {@code null}. */
    GatewayEvent next() {
        return events.poll();
    }

    /** Takes the usage gathered since the last call: the keys that used something, or {@code null} for none. */
    GatewayEvent.Usage takeUsage() {
        Map<String, Debit> byKey = null;
        for (Map.Entry<String, Tally> e : usage.entrySet()) {
            long requests = e.getValue().requests.getAndSet(0);
            long tokens = e.getValue().tokens.getAndSet(0);
            if (requests != 0 || tokens != 0) {
                if (byKey == null) {
                    byKey = new HashMap<>();
                }
                byKey.put(e.getKey(), new Debit(requests, tokens));
                if (byKey.size() == EventCodec.MAX_KEYS) {
                    break; // the rest go in the next report
                }
            }
        }
        return byKey == null ? null : new GatewayEvent.Usage(replica, clock.millis(), byKey);
    }

    /** Returns how many events were dropped on a full queue. */
    long dropped() {
        return dropped.sum();
    }
}
