package io.heartgate.agent.probe;

import io.heartgate.agent.probe.Payloads.PrefillCounters;
import io.heartgate.protocol.HeartbeatRules;

/**
 * Turns a server's cumulative prefill counters, read once a probe, into the prefill speed a heartbeat
 * reports: prompt tokens prefilled over seconds spent prefilling, both as grown since the previous
 * reading. The counters carry their own time, so no clock is needed.
 *
 * <p>A period in which nothing was prefilled keeps the last speed: a server does not prefill slower for
 * having been idle, and a scheduler needs the figure most when a request comes to an idle node. A
 * period whose tokens came with too little time to give a speed within the heartbeat's range (a
 * server that rounds its seconds to the millisecond, a prompt of a few tokens) keeps the last speed
 * too, and its tokens count in the next period. The speed is forgotten when the counters go back (the
 * server restarted, perhaps with another model or on other hardware) and on {@link #reset()}, which
 * the prober calls when a probe fails: what the server did before a gap says little of it after.
 *
 * <p>Not thread-safe: one probe loop owns it.
 */
final class PrefillSpeed {

    private PrefillCounters before;
    private Double last;

    /**
     * Takes the counters of this probe and returns the speed to report, in prompt tokens per second;
     * {@code null} until one is measured, and when {@code now} is {@code null} (the server has no such
     * counters), which also forgets what was measured.
     */
    Double next(PrefillCounters now) {
        if (now == null) {
            reset();
            return null;
        }
        if (before != null && (now.tokens() < before.tokens() || now.seconds() < before.seconds())) {
            reset();
        }
        if (before == null) {
            before = now;
            return last;
        }
        double tokens = now.tokens() - before.tokens();
        if (tokens == 0) {
            before = now;
            return last;
        }
        double tps = tokens / (now.seconds() - before.seconds());
        if (HeartbeatRules.checkPrefillTps(tps, "prefillTps").isPresent()) {
            return last;
        }
        before = now;
        last = tps;
        return tps;
    }

    /** Forgets the counters and the speed: the next reading starts a new measurement. */
    void reset() {
        before = null;
        last = null;
    }
}
