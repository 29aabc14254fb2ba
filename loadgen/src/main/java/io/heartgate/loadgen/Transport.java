package io.heartgate.loadgen;

import java.net.URI;
import java.time.Duration;
import java.util.Map;

/**
 * Sends one streaming request and reports its answer line by line. The seam between the runner's
 * open-loop logic and HTTP, so tests can answer with scripted streams.
 */
public interface Transport {

    /**
     * Describes a request.
     *
     * @param uri where to POST
     * @param body the JSON body
     * @param bearer the API key for {@code Authorization: Bearer}, or null for no header
     * @param timeout how long to wait for the response headers
     * @param headers more request headers (a session id), usually none
     */
    record Outgoing(URI uri, String body, String bearer, Duration timeout, Map<String, String> headers) {
        /** A request without more headers. */
        public Outgoing(URI uri, String body, String bearer, Duration timeout) {
            this(uri, body, bearer, timeout, Map.of());
        }
    }

    /**
     * Receives one answer, from any thread but one call at a time: {@link #headers} first when a
     * response arrives, then {@link #line}s, then {@link #complete} or {@link #failed}; {@link #failed}
     * may also come alone, or more than once.
     */
    interface Listener {
        /** Reports the response status. */
        void headers(int status);

        /**
         * Reports the node that answered, from a proxy's {@code X-Upstream-Node} header; called right
         * after {@link #headers} when the response has one.
         */
        default void upstream(String node) {
        }

        /** Reports a scheduler's {@code X-Heartgate-Affinity} (how the affinity strategy placed it), when present. */
        default void affinity(String placement) {
        }

        /** Reports one line of the body, without its line break. */
        void line(String line);

        /** Reports that the body ended normally. */
        void complete();

        /** Reports that the request failed or the body broke off. */
        void failed(Throwable error);
    }

    /** Stops a request under way. */
    interface Call {
        /** Abandons the request and closes its stream; safe to call more than once. */
        void cancel();
    }

    /** Starts sending {@code request} and returns at once. */
    Call send(Outgoing request, Listener listener);
}
