package io.heartgate.scheduler;

import io.heartgate.protocol.Durations;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.affinity.AffinityKeys;
import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.balancer.KeyHomes;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.time.Ticker;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * The {@code affinity} strategy's settings; validated whatever the strategy (a typo in a setting
 * meant for later is caught at once), used only under {@code affinity}.
 *
 * @param keys where a request's key comes from and how much of the prompt the prefix key covers
 * @param bound which rule moves a key off its node: {@link Bound#WAIT} (sticky until saturated) or
 *     {@link Bound#REQUESTS} (bounded loads)
 * @param maxWait under {@link Bound#WAIT}, the expected prefill wait at which a key leaves a node of unknown capacity
 * @param loadFactor under {@link Bound#REQUESTS}, {@code c}: no node is sent more than
 *     {@code ceil(c x (total in flight + 1) / nodes)}
 * @param fallback the strategy for requests without a key
 */
public record AffinityConfig(AffinityKeys keys, Bound bound, Duration maxWait, double loadFactor, Strategy fallback) {

    /** Which rule moves a key off its node ({@code --affinity-bound}). */
    public enum Bound {
        /** Sticky until saturated: the node is full, or its expected prefill wait passes {@code --affinity-max-wait}. */
        WAIT,
        /** Bounded loads: the node holds more than its share of this scheduler's requests, times {@code c}. */
        REQUESTS;

        /** Returns the bound named {@code wait} or {@code requests}. */
        static Bound parse(String name) {
            return switch (name == null ? "" : name.trim().toLowerCase(Locale.ROOT)) {
                case "wait" -> WAIT;
                case "requests" -> REQUESTS;
                default -> throw new InvalidSettingException("affinityBound", "'" + name
                        + "' is not a bound; use wait (sticky until saturated) or requests (bounded loads)");
            };
        }
    }

    /** The longest wait limit accepted. */
    private static final Duration MAX_WAIT = Duration.ofMinutes(10);

    /** The defaults: {@link AffinityKeys#DEFAULTS}, sticky until saturated within 1 s, least-loaded. */
    public static final AffinityConfig DEFAULTS = new AffinityConfig(AffinityKeys.DEFAULTS, Bound.WAIT,
            Strategy.DEFAULT_MAX_WAIT, Strategy.DEFAULT_LOAD_FACTOR, Strategy.LEAST_LOADED);

    /** Validates; a bad value throws {@link InvalidSettingException} naming its flag. */
    public AffinityConfig {
        Objects.requireNonNull(keys, "keys");
        Objects.requireNonNull(bound, "bound");
        if (maxWait == null || maxWait.isNegative() || maxWait.compareTo(MAX_WAIT) > 0) {
            throw new InvalidSettingException("affinityMaxWait", "must be 0s to 10m, was " + Durations.format(maxWait));
        }
        if (!(loadFactor >= 1.0 && loadFactor <= 100.0)) {
            throw new InvalidSettingException("affinityLoadFactor", "must be 1 to 100 (1.25: a node takes at most "
                    + "25% more than the mean), was " + loadFactor);
        }
        if (fallback == null || fallback == Strategy.AFFINITY) {
            throw new InvalidSettingException("affinityFallback", "must be another strategy than affinity");
        }
    }

    /** Returns the balancer these settings make, timing homes by {@code ticker}. */
    public Balancer balancer(Ticker ticker) {
        return balancer(ticker, homes());
    }

    /** Returns the balancer these settings make, keeping conversations' homes in {@code homes} (see {@link #homes}). */
    public Balancer balancer(Ticker ticker, KeyHomes homes) {
        return bound == Bound.WAIT ? Strategy.sticky(maxWait, fallback, homes, ticker)
                : Strategy.affinity(loadFactor, fallback);
    }

    /** Returns a table for the conversations' homes when these settings keep any (the sticky rule), else {@code null}. */
    public KeyHomes homes() {
        return bound == Bound.WAIT ? new KeyHomes() : null;
    }
}
