package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.Dispatcher;
import io.heartgate.scheduler.proxy.policy.RetryPolicy;

/**
 * Opens the {@link Exchange}s of one event loop, each with what it works with: the loop's pool of
 * node connections and timeouts, the dispatcher that finds a retry its node, the retry policy, and
 * the taps its answer is told to, and the spare buffers streams are copied into
 * ({@link TranscriptBuffers}). Hands them over at construction and keeps no getter: an exchange
 * never reaches through it. Event-loop confined, apart from the shared parts.
 */
final class Exchanges {

    private final UpstreamPool pool;
    private final Timeouts timeouts;
    private final Dispatcher dispatcher;
    private final RetryPolicy retry;
    private final NodeEvidence evidence;
    private final Recorder recorder;
    private final TranscriptBuffers transcripts = new TranscriptBuffers();

    Exchanges(UpstreamPool pool, Timeouts timeouts, Dispatcher dispatcher, RetryPolicy retry, NodeEvidence evidence,
              Recorder recorder) {
        this.pool = pool;
        this.timeouts = timeouts;
        this.dispatcher = dispatcher;
        this.retry = retry;
        this.evidence = evidence;
        this.recorder = recorder;
    }

    /** Returns the exchange that relays {@code call} for {@code conn}, to be started ({@link Exchange#start}). */
    Exchange open(ClientConnection conn, Admitted call) {
        conn.usage().transcript().from(transcripts);
        return new Exchange(conn, call, new UpstreamSide(pool), timeouts, dispatcher, retry, evidence, recorder);
    }
}
