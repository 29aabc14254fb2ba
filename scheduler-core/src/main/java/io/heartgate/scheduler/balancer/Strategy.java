package io.heartgate.scheduler.balancer;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.time.Ticker;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.random.RandomGenerator;

/** Names the six balancing strategies and builds their balancers. */
public enum Strategy {
    /** Uniformly at random. */
    RANDOM,
    /** In turn, in node-id order. */
    ROUND_ROBIN,
    /** Smooth weighted round robin, as nginx does it. */
    WEIGHTED,
    /** Fewest of this scheduler's requests in flight, relative to weight; ties in rotation. */
    LEAST_CONNECTIONS,
    /** Lowest score of in-flight and reported load against capacity, KV-cache use and weight: every candidate compared when few, two random ones when many. */
    LEAST_LOADED,
    /** Cache affinity on the request's key (sticky until saturated, or bounded loads); requests without one go to the fallback strategy. */
    AFFINITY;

    /** Returns the command-line name, such as {@code least-connections}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * Parses a command-line name.
     *
     * @throws InvalidSettingException for {@code strategy}, listing the accepted names
     */
    public static Strategy parse(String value) {
        for (Strategy s : values()) {
            if (s.label().equals(value == null ? "" : value.trim().toLowerCase(Locale.ROOT))) {
                return s;
            }
        }
        throw new InvalidSettingException("strategy", "'" + value
                + "' is not a strategy; use random, round-robin, weighted, least-connections, least-loaded or affinity");
    }

    /** Returns a new balancer drawing randomness from each thread's {@link ThreadLocalRandom}. */
    public Balancer create() {
        return create(() -> ThreadLocalRandom.current().nextLong(), 0);
    }

    /**
     * Returns a new balancer with the given randomness and starting counter (tests seed both).
     *
     * @param random must be thread-safe if the balancer is shared between threads
     */
    public Balancer create(RandomGenerator random, long counterStart) {
        return switch (this) {
            case RANDOM -> new RandomBalancer(random);
            case ROUND_ROBIN -> new RoundRobinBalancer(counterStart);
            case WEIGHTED -> new SmoothWeightedBalancer();
            case LEAST_CONNECTIONS -> new LeastConnectionsBalancer(counterStart);
            case LEAST_LOADED -> new LeastLoadedBalancer(random, counterStart);
            case AFFINITY -> AffinityBalancer.sticky(DEFAULT_MAX_WAIT, new KeyHomes(), LEAST_LOADED.create(random, counterStart),
                    Ticker.SYSTEM);
        };
    }

    /** The sticky rule's default wait limit ({@code --affinity-max-wait}). */
    public static final Duration DEFAULT_MAX_WAIT = Duration.ofSeconds(1);

    /** The affinity strategy's default load factor: a node takes at most 25% more than the mean. */
    public static final double DEFAULT_LOAD_FACTOR = 1.25;

    /**
     * Returns the affinity balancer with load factor {@code c}, requests without a key going to
     * {@code fallback}'s balancer.
     *
     * @throws InvalidSettingException for {@code affinity-load-factor} or, when
     *     {@code fallback} is affinity itself, {@code affinity-fallback}
     */
    public static Balancer affinity(double c, Strategy fallback) {
        if (fallback == AFFINITY) {
            throw new InvalidSettingException("affinityFallback", "must be another strategy than affinity");
        }
        return new AffinityBalancer(c, fallback.create());
    }

    /**
     * Returns the affinity balancer by the sticky-until-saturated rule with wait limit {@code maxWait},
     * requests without a key going to {@code fallback}'s balancer; homes timed by {@code ticker}.
     *
     * @throws InvalidSettingException for {@code affinity-max-wait}, or {@code affinity-fallback}
     *     when {@code fallback} is affinity itself
     */
    public static Balancer sticky(Duration maxWait, Strategy fallback, Ticker ticker) {
        return sticky(maxWait, fallback, new KeyHomes(), ticker);
    }

    /** As {@link #sticky(Duration, Strategy, Ticker)}, keeping the conversations' homes in {@code homes}. */
    public static Balancer sticky(Duration maxWait, Strategy fallback, KeyHomes homes, Ticker ticker) {
        if (fallback == AFFINITY) {
            throw new InvalidSettingException("affinityFallback", "must be another strategy than affinity");
        }
        return AffinityBalancer.sticky(maxWait, homes, fallback.create(), ticker);
    }
}
