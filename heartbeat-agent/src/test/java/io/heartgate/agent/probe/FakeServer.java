package io.heartgate.agent.probe;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ConnectException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An {@link HttpGetter} answering from a map of path to response; unknown paths get 404, paths marked
 * unreachable (or all, when down) an {@link IOException}. Answers {@code POST /api/show} by the model
 * named in the body, 404 for a model it was not given, and notes each model asked about, answered or
 * not.
 */
final class FakeServer implements HttpGetter {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Map<String, Response> routes = new HashMap<>();
    private final Map<String, Response> shows = new HashMap<>();
    private final List<String> shown = new ArrayList<>();
    private final Set<String> unreachable = new HashSet<>();
    private boolean down;

    FakeServer route(String path, int status, String body) {
        routes.put(path, new Response(status, body));
        return this;
    }

    /** Answers {@code POST /api/show} for {@code model} with {@code status} and {@code body}. */
    FakeServer show(String model, int status, String body) {
        shows.put(model, new Response(status, body));
        return this;
    }

    /** Returns the models asked about with {@code POST /api/show}, in order, and forgets them. */
    List<String> takeShown() {
        List<String> out = List.copyOf(shown);
        shown.clear();
        return out;
    }

    FakeServer unreachable(String path, boolean value) {
        if (value) {
            unreachable.add(path);
        } else {
            unreachable.remove(path);
        }
        return this;
    }

    FakeServer down(boolean value) {
        this.down = value;
        return this;
    }

    FakeServer clear() {
        routes.clear();
        unreachable.clear();
        return this;
    }

    @Override
    public Response get(String path) throws IOException {
        if (down || unreachable.contains(path)) {
            throw new ConnectException("Connection refused");
        }
        return routes.getOrDefault(path, new Response(404, "404 page not found"));
    }

    @Override
    public Response post(String path, String body) throws IOException {
        String model = JSON.readTree(body).path("model").asText();
        shown.add(model);
        if (down || unreachable.contains(path)) {
            throw new ConnectException("Connection refused");
        }
        if (!path.equals("/api/show")) {
            return new Response(404, "404 page not found");
        }
        return shows.getOrDefault(model, new Response(404, "{\"error\":\"model '" + model + "' not found\"}"));
    }
}
