package io.heartgate.scheduler.config;

import io.heartgate.protocol.InvalidSettingException;
import java.time.Duration;

/**
 * Says how the scheduler protects clients from nodes that misbehave without dying outright.
 * Validated on construction.
 *
 * @param flapLimit changes (UP/DOWN, join/leave) a node may make within {@code flapWindow} before it is
 *     held out of routing ({@code --flap-limit}); 0 turns flap damping off
 * @param flapWindow the window those changes are counted in, and the first hold ({@code --flap-window})
 * @param slowStart how long a node that joins or returns takes to reach its full share of new requests
 *     ({@code --slow-start}); zero turns slow start off
 */
public record ResilienceConfig(int flapLimit, Duration flapWindow, Duration slowStart) {

    /** The defaults: more than 4 changes in a minute hold a node; no slow start. */
    public static final ResilienceConfig DEFAULTS = new ResilienceConfig(4, Duration.ofSeconds(60), Duration.ZERO);

    /** Checks ranges; a bad value throws {@link InvalidSettingException} naming its component. */
    public ResilienceConfig {
        if (flapLimit < 0 || flapLimit > 1000) {
            throw new InvalidSettingException("flapLimit", "must be 0 (off) to 1000, was " + flapLimit);
        }
        if (flapWindow == null || flapWindow.toSeconds() < 1 || flapWindow.toHours() > 24) {
            throw new InvalidSettingException("flapWindow", "must be 1s to 24h");
        }
        if (slowStart == null || slowStart.isNegative() || slowStart.toHours() > 24) {
            throw new InvalidSettingException("slowStart", "must be 0 (off) to 24h");
        }
    }
}
