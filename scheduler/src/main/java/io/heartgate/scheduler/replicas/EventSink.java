package io.heartgate.scheduler.replicas;

import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.balancer.KeyHomes;
import io.heartgate.scheduler.health.FlapDamping;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.routing.ResponseHomes;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.trust.ApiKeys;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Applies what another replica wrote to this one: its usage to the same keys' buckets, its
 * ejections and readmissions to passive health, its flap holds to flap damping, its placements to
 * the response and session homes. Records older than what they can still change are skipped: usage
 * after a minute (a bucket has refilled it), an ejection or a hold past its end, a placement past
 * its time to live.
 */
final class EventSink {

    /** Usage older than this has been refilled in any bucket: a minute. */
    static final long USAGE_MATTERS_MS = TimeUnit.MINUTES.toMillis(1);

    private final RateLimits limits;
    private final Supplier<ApiKeys> keys;
    private final PassiveHealth health;
    private final FlapDamping flaps;
    private final KeyHomes sessions;
    private final ResponseHomes responses;
    private final Ticker ticker;

    /**
     * @param keys the API keys, whose limits the buckets hold; {@code null} without keys (usage is then ignored)
     * @param flaps flap damping, or {@code null} when the others' holds are not wanted
     * @param sessions the affinity homes, or {@code null} when the strategy keeps none
     */
    EventSink(RateLimits limits, Supplier<ApiKeys> keys, PassiveHealth health, FlapDamping flaps, KeyHomes sessions,
              ResponseHomes responses, Ticker ticker) {
        this.limits = limits;
        this.keys = keys;
        this.health = health;
        this.flaps = flaps;
        this.sessions = sessions;
        this.responses = responses;
        this.ticker = ticker;
    }

    /** Applies {@code e}, stored {@code ageMs} ago by the broker's clock. */
    void apply(GatewayEvent e, long ageMs) {
        if (e instanceof GatewayEvent.Usage u) {
            if (keys == null || ageMs >= USAGE_MATTERS_MS) {
                return;
            }
            ApiKeys current = keys.get();
            long at = ticker.nanos() - TimeUnit.MILLISECONDS.toNanos(ageMs);
            u.byKey().forEach((name, d) -> {
                ApiKeys.Key key = current.named(name);
                if (key != null) {
                    limits.debit(key, d.requests(), d.tokens(), at);
                }
            });
        } else if (e instanceof GatewayEvent.Ejected j) {
            // How long the writer held it out, by its own clock, less the time the record took here:
            // no writer's clock, fast or forged, holds a node out longer than passive health would.
            Duration held = Duration.ofMillis(Math.max(0, j.untilMs() - j.sentAtMs()) - ageMs);
            health.adopt(j.nodeId(), held, j.failures(), j.reason(), j.replica());
        } else if (e instanceof GatewayEvent.Held h && flaps != null) {
            // As for an ejection: the writer's hold, less the record's time on its way, never longer.
            flaps.adopt(h.nodeId(), Duration.ofMillis(Math.max(0, h.untilMs() - h.sentAtMs()) - ageMs), h.reason(),
                    h.replica());
        } else if (e instanceof GatewayEvent.Readmitted r) {
            health.readmit(r.nodeId(), r.replica());
        } else if (e instanceof GatewayEvent.Placed p) {
            long ageNanos = TimeUnit.MILLISECONDS.toNanos(ageMs);
            if (p.kind() == GatewayEvent.Placed.Kind.RESPONSE) {
                responses.adopt(p.id(), p.nodeId(), ageNanos);
            } else if (sessions != null) {
                sessions.adopt(Long.parseUnsignedLong(p.id(), 16), p.nodeId(), p.bytes(), ticker.nanos(), ageNanos);
            }
        }
    }
}
