package io.heartgate.scheduler;

import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The scheduler's flags for overload: the gateway queue that holds requests while every node for
 * their model is at its capacity, and usage accounting. A picocli mixin of {@link SchedulerMain};
 * the proxy configuration validates the values.
 */
final class OverloadOptions {

    @Option(names = "--max-queue", paramLabel = "N", defaultValue = "${env:SCHEDULER_MAX_QUEUE:-1000}",
            description = {"requests that may wait in the gateway queue per model while every node serving "
                    + "it is at its capacity; one more gets 503 `overloaded` with `Retry-After`; `0` answers at "
                    + "once [env SCHEDULER_MAX_QUEUE] (default: 1000)",
                "Accepted: 0 to 1000000"})
    int maxQueue;

    @Option(names = "--queue-timeout", paramLabel = "D", defaultValue = "${env:SCHEDULER_QUEUE_TIMEOUT:-60s}",
            description = {"the longest a request waits in the gateway queue; then 503 `overloaded` with "
                    + "`Retry-After` [env SCHEDULER_QUEUE_TIMEOUT] (default: 60s)",
                "Accepted: positive"})
    Duration queueTimeout;

    @Option(names = "--reserve-slots", paramLabel = "N", defaultValue = "${env:SCHEDULER_RESERVE_SLOTS:-0}",
            description = {"the last N free slots of a model's nodes (capacity less the others' work, less "
                    + "this scheduler's requests in flight, summed over the nodes not ejected, or over all when "
                    + "every one is; unbounded, so no reserve, when a node's capacity is unknown; at most the "
                    + "model's slots less one, so the flood always keeps one) are not given to a first attempt "
                    + "whose caller has more than 4 first attempts of its class waiting in the gateway queue for "
                    + "the model (a flood, beyond a sparse caller's burst): it stays queued, and requests of its "
                    + "class or a higher one from other callers take them; no lower class of the same model takes "
                    + "what a higher one was held back from in the same serving pass (another model sharing the "
                    + "nodes is not held); retries are never held back. Held only while another caller of the "
                    + "flood's class or a higher one, itself within 4 first attempts waiting, has had a first "
                    + "attempt for the model reach the gateway queue (every node full, or the model's requests "
                    + "already waiting) within the last 60 s: a flood alone, beside lower classes only, or beside "
                    + "other floods takes every free slot. Trades the flooding callers' throughput (up to N slots "
                    + "idle) for the others' time to first token [env SCHEDULER_RESERVE_SLOTS] (default: `0` (off))",
                "Accepted: 0 to 100000"})
    int reserveSlots;

    @Option(names = "--force-usage", paramLabel = "BOOL", arity = "0..1", fallbackValue = "true",
            defaultValue = "${env:SCHEDULER_FORCE_USAGE:-false}",
            description = {"OpenAI streaming requests (`/v1/chat/completions`, `/v1/completions`, `\"stream\": "
                    + "true`) are sent asking for `\"stream_options\":{\"include_usage\":true}` (added where "
                    + "`stream_options` is missing or `null`, added inside it otherwise, `true` over the client's "
                    + "`false` or what vLLM's pydantic reads as false (`0`, `\"false\"`, `\"no\"`, `\"off\"`, `\"f\"`, "
                    + "`\"n\"`); of repeated fields, `stream` included, the last; `stream` read as vLLM's pydantic "
                    + "reads a boolean, so `1`, `1.0` and `\"true\"`, `\"yes\"`, `\"on\"`, `\"t\"`, `\"y\"` stream too), so "
                    + "that the node ends the stream with a usage chunk and its tokens are counted. A client that "
                    + "did not ask for the chunk (no `stream_options`, `null`, `include_usage` false or null as "
                    + "read above) does not get it: the event with `\"choices\":[]` and a `usage` object, and its "
                    + "blank line, are kept back (a line is held until its end only while it is at most 4 KiB; a "
                    + "stream whose head gives its length is relayed as it is). A `stream_options` without "
                    + "`include_usage` does not ask for it (as OpenAI, SGLang and Ollama read it; vLLM alone sends "
                    + "the chunk then) unless it asks for `continuous_usage_stats`, which only vLLM knows; a stream "
                    + "with a `Content-Encoding` is relayed as it is, as is one whose lines end with a bare CR once "
                    + "that is seen [env SCHEDULER_FORCE_USAGE] (default: false)",
                "Accepted: `true`, `false`"})
    boolean forceUsage;
}
