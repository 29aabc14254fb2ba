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

    /**
     * Returns the status and body of {@code POST base + path} with the JSON {@code body}, for the
     * reads a server answers only to a POST (Ollama's {@code /api/show}). A getter that cannot post
     * keeps this default, which fails as a server that cannot be reached does, so what only a POST
     * tells stays unknown.
     *
     * @throws IOException when the server cannot be reached or does not answer in time
     */
    default Response post(String path, String body) throws IOException {
        throw new IOException("this getter does not POST (" + path + ")");
    }

    /** Holds an HTTP answer; {@code body} is never null. */
    record Response(int status, String body) {

        /** Returns whether the status is 2xx. */
        public boolean ok() {
            return status >= 200 && status < 300;
        }
    }
}
