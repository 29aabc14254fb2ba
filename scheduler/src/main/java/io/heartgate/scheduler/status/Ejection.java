package io.heartgate.scheduler.status;

import java.time.Instant;

/**
 * Describes a node ejected by passive health checks.
 *
 * @param until when it gets requests again
 * @param consecutiveFailures connect failures in a row
 * @param reason the last failure, for operators
 */
public record Ejection(Instant until, int consecutiveFailures, String reason) {
}
