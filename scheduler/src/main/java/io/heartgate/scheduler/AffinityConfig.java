package io.heartgate.scheduler;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.affinity.AffinityKeys;
import io.heartgate.scheduler.balancer.Strategy;
import java.util.Objects;

/**
 * The {@code affinity} strategy's settings; validated whatever the strategy (a typo in a setting
 * meant for later is caught at once), used only under {@code affinity}.
 *
 * @param keys where a request's key comes from and how much of the prompt the prefix key covers
 * @param loadFactor {@code c}: no node is sent more than {@code ceil(c x (total in flight + 1) / nodes)}
 * @param fallback the strategy for requests without a key
 */
public record AffinityConfig(AffinityKeys keys, double loadFactor, Strategy fallback) {

    /** The defaults: {@link AffinityKeys#DEFAULTS}, 1.25, least-loaded. */
    public static final AffinityConfig DEFAULTS = new AffinityConfig(AffinityKeys.DEFAULTS,
            Strategy.DEFAULT_LOAD_FACTOR, Strategy.LEAST_LOADED);

    /** Validates; a bad value throws {@link InvalidSettingException} naming its flag. */
    public AffinityConfig {
        Objects.requireNonNull(keys, "keys");
        if (!(loadFactor >= 1.0 && loadFactor <= 100.0)) {
            throw new InvalidSettingException("affinityLoadFactor", "must be 1 to 100 (1.25: a node takes at most "
                    + "25% more than the mean), was " + loadFactor);
        }
        if (fallback == null || fallback == Strategy.AFFINITY) {
            throw new InvalidSettingException("affinityFallback", "must be another strategy than affinity");
        }
    }
}
