package io.heartgate.loadgen;

/** Names how arrival times are spread over a run. */
public enum Arrivals {
    /** Independent arrivals: exponential gaps with mean 1/rate, as many users acting on their own produce. */
    POISSON,
    /** Exactly 1/rate apart, starting at 0: easy to reason about, but kinder to a server than real traffic. */
    UNIFORM
}
