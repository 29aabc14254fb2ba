package io.heartgate.agent.probe;

import java.io.IOException;

/** Fetches a path of the inference server; implementations bound every call in time. */
public interface HttpGetter {

    /**
     * Returns the status and body of {@code GET base + path}.
     *
     * @throws IOException when the server cannot be reached or does not answer in time
     */
    Response get(String path) throws IOException;

    /** Holds an HTTP answer; {@code body} is never null. */
    record Response(int status, String body) {

        /** Returns whether the status is 2xx. */
        public boolean ok() {
            return status >= 200 && status < 300;
        }
    }
}
