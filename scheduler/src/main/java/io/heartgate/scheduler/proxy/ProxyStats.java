package io.heartgate.scheduler.proxy;

import java.util.concurrent.atomic.LongAdder;

/** Counts what the proxy did; thread-safe, read by the admin API and metrics. */
public final class ProxyStats {

    final LongAdder requests = new LongAdder();
    final LongAdder retries = new LongAdder();
    final LongAdder clientCancellations = new LongAdder();
    final LongAdder connectFailures = new LongAdder();
    final LongAdder upstreamResets = new LongAdder();
    final LongAdder timeouts = new LongAdder();
    final LongAdder overloadAnswers = new LongAdder();
    final LongAdder errorsNoUpstream = new LongAdder();
    final LongAdder errorsModelNotFound = new LongAdder();
    final LongAdder errorsUnreachable = new LongAdder();
    final LongAdder errorsTooLarge = new LongAdder();
    final LongAdder activeStreams = new LongAdder();
    final LongAdder badRequests = new LongAdder();
    final LongAdder staleConnections = new LongAdder();

    public long requests() {
        return requests.sum();
    }

    public long retries() {
        return retries.sum();
    }

    public long clientCancellations() {
        return clientCancellations.sum();
    }

    public long connectFailures() {
        return connectFailures.sum();
    }

    public long timeouts() {
        return timeouts.sum();
    }

    public long overloadAnswers() {
        return overloadAnswers.sum();
    }

    /** Returns how often a pooled connection turned out closed by its node and the request went again on a new one. */
    public long staleConnections() {
        return staleConnections.sum();
    }

    public long upstreamResets() {
        return upstreamResets.sum();
    }

    /** Returns the proxy's own error answers of one type (no_upstream, model_not_found, ...). */
    public long errors(String type) {
        return switch (type) {
            case ProxyErrors.NO_UPSTREAM -> errorsNoUpstream.sum();
            case ProxyErrors.MODEL_NOT_FOUND -> errorsModelNotFound.sum();
            case ProxyErrors.UPSTREAM_UNREACHABLE -> errorsUnreachable.sum();
            case ProxyErrors.REQUEST_TOO_LARGE -> errorsTooLarge.sum();
            case ProxyErrors.UPSTREAM_TIMEOUT -> timeouts.sum();
            case ProxyErrors.BAD_REQUEST -> badRequests.sum();
            default -> 0;
        };
    }

    public long activeStreams() {
        return activeStreams.sum();
    }
}
