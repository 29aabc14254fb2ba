package io.heartgate.scheduler.tracing;

import io.heartgate.scheduler.request.Endpoint;

/**
 * Begins the trace of each proxied request ({@link RequestTrace}), or nothing at all: with tracing
 * off, {@link #OFF} hands out {@link RequestTrace#NONE}, whose every method is empty, so the request
 * path allocates and reads nothing for it. Thread-safe.
 */
public interface Tracing extends AutoCloseable {

    /** No traces: every request gets {@link RequestTrace#NONE}. */
    Tracing OFF = new Tracing() {
        @Override
        public boolean on() {
            return false;
        }

        @Override
        public RequestTrace request(Endpoint endpoint, String method, String model, String caller, String traceparent,
                                    String tracestate, long startNanos) {
            return RequestTrace.NONE;
        }

        @Override
        public void close() {
        }
    };

    /** Says whether requests are traced; when not, a caller need not read what {@link #request} would take. */
    boolean on();

    /**
     * Begins the trace of one request to {@code endpoint}: its server span starts at {@code startNanos}
     * (on the scheduler's monotonic ticker, when the request arrived), a child of the caller's trace
     * when {@code traceparent} (and {@code tracestate}) carry one.
     *
     * @param model the model the request names, as the client wrote it (Ollama's {@code :latest} left
     *     off), or {@code null}
     * @param caller the API key's name, or {@code null}
     */
    RequestTrace request(Endpoint endpoint, String method, String model, String caller, String traceparent,
                         String tracestate, long startNanos);

    /** Sends what is still buffered and stops; waits a few seconds at most. */
    @Override
    void close();
}
