package io.heartgate.loadgen;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/**
 * Records what happened to one request. Times are milliseconds counted from the request's scheduled
 * start, so a generator that fell behind shows as latency rather than hiding it.
 *
 * @param conversation the conversation's index in the plan
 * @param turn the turn, from 1
 * @param model the model asked
 * @param key the key's label, or null when no key was sent
 * @param scheduledMs the scheduled start, from the run's start
 * @param outcome how it ended
 * @param status the HTTP status, or 0 when none arrived
 * @param ttftMs time to the first chunk with generated text, or -1 when none came
 * @param totalMs time to the end of the stream (or to the failure), or -1 when not sent
 * @param tokens chunks with generated text received
 * @param loadNanos Ollama's {@code load_duration}, or -1 when the answer had none
 * @param promptTokens the prompt length the server reported, or -1 when it reported none
 * @param promptChars characters in the messages sent
 * @param node the node that answered (a proxy's {@code X-Upstream-Node}), or null
 * @param error the server's or the client's message for a failure, or null
 * @param affinity how a scheduler on the affinity strategy placed it ({@code X-Heartgate-Affinity}:
 *     {@code hit}, {@code spill}, {@code none}), or null
 * @param session the session header's value sent with it ({@code --session-header}), or null when none was
 */
@JsonPropertyOrder({"conversation", "turn", "model", "key", "scheduledMs", "kind", "status", "ttftMs", "totalMs",
    "tokens", "loadNanos", "promptTokens", "promptChars", "error"})
public record Sample(int conversation, int turn, String model, String key, double scheduledMs,
                     @JsonIgnore Outcome outcome, int status, double ttftMs, double totalMs, int tokens,
                     long loadNanos, int promptTokens, int promptChars, String node, String error, String affinity,
                     String session) {

    /** A sample sent without a session header. */
    public Sample(int conversation, int turn, String model, String key, double scheduledMs, Outcome outcome, int status,
                  double ttftMs, double totalMs, int tokens, long loadNanos, int promptTokens, int promptChars,
                  String node, String error, String affinity) {
        this(conversation, turn, model, key, scheduledMs, outcome, status, ttftMs, totalMs, tokens, loadNanos,
                promptTokens, promptChars, node, error, affinity, null);
    }

    /** A sample without an affinity placement. */
    public Sample(int conversation, int turn, String model, String key, double scheduledMs, Outcome outcome, int status,
                  double ttftMs, double totalMs, int tokens, long loadNanos, int promptTokens, int promptChars,
                  String node, String error) {
        this(conversation, turn, model, key, scheduledMs, outcome, status, ttftMs, totalMs, tokens, loadNanos,
                promptTokens, promptChars, node, error, null);
    }

    /** Returns the kind a report counts this under, such as {@code ok} or {@code http_503}. */
    @JsonProperty("kind")
    public String kind() {
        return outcome.kind(status);
    }

    /** Says whether the request ended well. */
    public boolean ok() {
        return outcome == Outcome.OK;
    }

    /** Says whether the request was sent at all. */
    public boolean sent() {
        return outcome != Outcome.DROPPED;
    }

    /**
     * Says whether the server had to load the model first: Ollama reported a {@code load_duration} of
     * {@value #LOAD_WAIT_MS} ms or more (a real Ollama reports a few ms even with the model in memory).
     */
    public boolean waitedOnLoad() {
        return loadNanos >= LOAD_WAIT_MS * 1_000_000L;
    }

    /** The shortest {@code load_duration} that counts as a wait for a load. */
    public static final long LOAD_WAIT_MS = 50;
}
