package io.heartgate.agent.probe;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Fetches from the inference server with the JDK's HTTP client, each call bounded by one timeout
 * (connect and answer) and each body by {@link #MAX_BODY_BYTES}. Thread-safe.
 */
public final class JdkHttpGetter implements HttpGetter {

    /** Largest body read; a vLLM {@code /metrics} page is about 100 KB. */
    static final int MAX_BODY_BYTES = 4 * 1024 * 1024;

    private final String base;
    private final Duration timeout;
    private final HttpClient client;

    /** Creates a getter for the server at {@code baseUrl} (a trailing slash is ignored). */
    public JdkHttpGetter(String baseUrl, Duration timeout) {
        this.base = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
        this.timeout = timeout;
        this.client = HttpClient.newBuilder()
                .connectTimeout(timeout)
                .version(HttpClient.Version.HTTP_1_1)
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    @Override
    public Response get(String path) throws IOException {
        return send(request(path).GET().build(), path);
    }

    @Override
    public Response post(String path, String body) throws IOException {
        return send(request(path).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8)).build(), path);
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create(base + path))
                .timeout(timeout)
                .header("accept", "application/json, text/plain, */*")
                .header("user-agent", "heartgate-agent");
    }

    private Response send(HttpRequest request, String path) throws IOException {
        try {
            HttpResponse<InputStream> response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream in = response.body()) {
                byte[] body = in.readNBytes(MAX_BODY_BYTES);
                return new Response(response.statusCode(), new String(body, StandardCharsets.UTF_8));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while fetching " + path, e);
        }
    }
}
