package io.heartgate.scheduler.admission;

/**
 * What decides whether and when a request goes on: the gateway queue for when every node is full,
 * and the per-key rate limits. Shared by every event loop.
 */
public record Admission(GatewayQueue queue, RateLimits limits) {
}
