package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.GatewayQueue;

/**
 * One event loop's periodic work, every {@link #EVERY_MS}: its exchanges' timeouts, the stall rule,
 * the rescue of requests on lost nodes, the pool's idle connections and the gateway queue's waits.
 * One task per loop instead of a timer per request. Event-loop confined.
 */
final class LoopSweep implements Runnable {

    /** How often each loop sweeps, in ms. */
    static final long EVERY_MS = 100;

    private final Timeouts timeouts;
    private final StallRule stalls;
    private final LostNodes lost;
    private final UpstreamPool pool;
    private final GatewayQueue queue;

    LoopSweep(Timeouts timeouts, StallRule stalls, LostNodes lost, UpstreamPool pool, GatewayQueue queue) {
        this.timeouts = timeouts;
        this.stalls = stalls;
        this.lost = lost;
        this.pool = pool;
        this.queue = queue;
    }

    @Override
    public void run() {
        timeouts.sweep();
        stalls.check();
        lost.rescue();
        pool.purge();
        queue.sweep();
    }
}
