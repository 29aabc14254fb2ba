package io.heartgate.agent.probe;

import java.io.IOException;
import java.net.ConnectException;
import java.util.HashMap;
import java.util.Map;

/** An {@link HttpGetter} answering from a map of path to response; unknown paths get 404. */
final class FakeServer implements HttpGetter {

    private final Map<String, Response> routes = new HashMap<>();
    private boolean down;

    FakeServer route(String path, int status, String body) {
        routes.put(path, new Response(status, body));
        return this;
    }

    FakeServer down(boolean value) {
        this.down = value;
        return this;
    }

    FakeServer clear() {
        routes.clear();
        return this;
    }

    @Override
    public Response get(String path) throws IOException {
        if (down) {
            throw new ConnectException("Connection refused");
        }
        return routes.getOrDefault(path, new Response(404, "404 page not found"));
    }
}
