package io.heartgate.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** Runs one {@link SimServer} on a free loopback port for a test, with a plain JDK HTTP client. */
final class SimHarness implements AutoCloseable {

    final Vertx vertx = Vertx.vertx();
    final SimServer server;
    final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    SimHarness(SimConfig config) throws Exception {
        server = new SimServer(config, Clock.systemUTC(), System::nanoTime);
        vertx.deployVerticle(server).await(20, TimeUnit.SECONDS);
    }

    URI uri(String path) {
        return URI.create("http://127.0.0.1:" + server.port() + path);
    }

    HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> post(String path, String json) throws IOException, InterruptedException {
        return http.send(postRequest(path, json), HttpResponse.BodyHandlers.ofString());
    }

    HttpRequest postRequest(String path, String json) {
        return HttpRequest.newBuilder(uri(path))
                .timeout(Duration.ofSeconds(20))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build();
    }

    JsonObject stats() throws IOException, InterruptedException {
        return new JsonObject(get("/sim/stats").body());
    }

    @Override
    public void close() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }
}
