package io.heartgate.scheduler;

import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The scheduler's flags for overload: the gateway queue that holds requests while every node for
 * their model is at its capacity, and usage accounting. A picocli mixin of {@link SchedulerMain};
 * the proxy configuration validates the values.
 */
final class OverloadOptions {

    @Option(names = "--max-queue", defaultValue = "${env:SCHEDULER_MAX_QUEUE:-1000}",
            description = "requests that may wait in the gateway, per model, while every node serving it is at its "
                    + "capacity; one more is answered 503 overloaded; 0 = answer at once [env SCHEDULER_MAX_QUEUE] "
                    + "(default: 1000)")
    int maxQueue;

    @Option(names = "--queue-timeout", defaultValue = "${env:SCHEDULER_QUEUE_TIMEOUT:-60s}",
            description = "the longest a request waits in the gateway queue before it is answered 503 overloaded "
                    + "[env SCHEDULER_QUEUE_TIMEOUT] (default: 60s)")
    Duration queueTimeout;

    @Option(names = "--reserve-slots", defaultValue = "${env:SCHEDULER_RESERVE_SLOTS:-0}",
            description = "free slots of a model's nodes kept for callers that are not flooding it: a caller with more "
                    + "than 4 requests waiting in the gateway queue for the model does not get the last N free slots; "
                    + "trades the flood's throughput for the other callers' time to first token; 0 = use every "
                    + "slot [env SCHEDULER_RESERVE_SLOTS] (default: 0)")
    int reserveSlots;

    @Option(names = "--force-usage", arity = "0..1", fallbackValue = "true",
            defaultValue = "${env:SCHEDULER_FORCE_USAGE:-false}",
            description = "make OpenAI streaming requests ask for stream_options.include_usage (added where missing, "
                    + "true over a client's false), so the nodes report the tokens of streams too "
                    + "[env SCHEDULER_FORCE_USAGE] (default: false)")
    boolean forceUsage;
}
