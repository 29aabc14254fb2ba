package io.heartgate.scheduler.status;

import java.time.Instant;

/**
 * Describes a node held out of routing: ejected by passive health checks, or held for flapping.
 *
 * @param until when it gets requests again
 * @param consecutiveFailures connect failures in a row; 0 for a hold that is not about connects
 * @param reason the last failure, or why it is held, for operators
 */
public record Ejection(Instant until, int consecutiveFailures, String reason) {

    /** Returns the operator's one-line why, as {@code /admin/nodes} shows it. */
    public String describe() {
        return consecutiveFailures > 0
                ? "ejected: " + consecutiveFailures + " consecutive connect failures (" + reason + ")"
                : "held: " + reason;
    }
}
