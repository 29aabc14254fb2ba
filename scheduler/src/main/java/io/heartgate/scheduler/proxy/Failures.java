package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Action;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Decision;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.table.Node;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Counts and logs a failed attempt, and reports connect failures to passive health. */
final class Failures {

    private static final Logger log = LoggerFactory.getLogger(Exchange.class);

    private Failures() {
    }

    /**
     * Records {@code failure} of an attempt on {@code node} that the retry policy answered with
     * {@code decision}; returns the failure in words, with the node's id, for the "every node
     * failed" message, or {@code null} when it is not a node's failure to report. {@code caller} is
     * the API key's name of the request, or {@code null}, for the log line.
     */
    static String record(ProxyCounters counters, PassiveHealth health, Failure failure, Decision decision, Node node,
                         Throwable cause, String caller) {
        String key = caller == null ? "-" : caller;
        switch (failure) {
            case CONNECT_FAILED -> {
                String why = describe(cause);
                counters.add(Counter.CONNECT_FAILURES);
                if (RetryPolicy.holdsAgainstNode(failure)) {
                    health.connectFailed(node.id(), node.url(), why);
                }
                log.debug("Node {} connect failed (key {}): {}", node.id(), key, why);
                return node.id() + ": " + why;
            }
            case STALE_CONNECTION, RESET_BEFORE_HEAD -> {
                if (decision.action() == Action.RESEND_SAME_NODE) {
                    counters.add(Counter.STALE_CONNECTIONS);
                    return null;
                }
                counters.add(Counter.UPSTREAM_RESETS);
                String why = cause == null ? "connection closed before the response" : describe(cause);
                log.debug("Node {} failed before answering (key {}): {}", node.id(), key, why);
                return node.id() + ": " + why;
            }
            case FIRST_BYTE_TIMEOUT, IDLE_TIMEOUT -> {
                counters.add(Counter.TIMEOUTS);
                log.debug("Node {} timed out ({}, key {}): {}", node.id(), failure, key, decision.action() == Action.CUT
                        ? "silent mid-response; cutting it" : "no response head in time");
                return null;
            }
            case BROKE_OFF -> {
                counters.add(Counter.BROKEN_RESPONSES);
                log.debug("Node {} broke off a response (key {}): {}", node.id(), key, cause == null ? "connection closed" : describe(cause));
                return null;
            }
            case NODE_LOST -> {
                counters.add(Counter.RESCUED);
                log.debug("Node {} stopped being routable while a request waited on it (key {}); moving it",
                        node.id(), key);
                return node.id() + ": stopped being routable while the request waited";
            }
            case CLIENT_GONE -> {
                counters.add(Counter.CLIENT_CANCELLATIONS);
                log.debug("Client of a request on node {} (key {}) hung up", node.id(), key);
                return null;
            }
            default -> {
                return null;
            }
        }
    }

    /** Returns the message of the proxy's own answer {@code error} after {@code attempts}. */
    static String message(ErrorType error, RequestFacts facts, Placement attempts, long firstByteMs) {
        return switch (error) {
            case NO_UPSTREAM -> "no routable inference node";
            case MODEL_NOT_FOUND -> "no routable node serves " + what(facts);
            case UPSTREAM_TIMEOUT -> "node " + attempts.node().id() + " did not answer within " + firstByteMs + " ms";
            default -> "every node tried failed before answering (" + attempts.count() + " tried; last: "
                    + attempts.lastFailure() + ")";
        };
    }

    /** Returns the message when the gateway queue is full, after {@code attempts} (the last failed: {@code lastFailure}). */
    static String queueFull(RequestFacts facts, int attempts, String lastFailure) {
        return attempts == 0 ? "every node serving " + what(facts) + " is at capacity and the gateway queue is full"
                : "every other node serving the model is at capacity and the gateway queue is full (after "
                        + lastFailure + ")";
    }

    /** Returns the message when the one node a management call may go to failed ({@code why}). */
    static String pinnedFailed(Node node, String why) {
        return "node " + node.id() + " failed: " + why + " (a management call goes to its node only)";
    }

    /** Returns what a request asks for, in words: its model, or any model. */
    static String what(RequestFacts facts) {
        return facts.model() == null ? "any model" : "model '" + facts.displayModel() + "'";
    }

    static String describe(Throwable t) {
        if (t == null) {
            return "unknown";
        }
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
