package io.heartgate.agent.probe;

import java.io.IOException;
import java.net.ConnectException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * An {@link HttpGetter} answering from a map of path to response; unknown paths get 404, paths marked
 * unreachable (or all, when down) an {@link IOException}.
 */
final class FakeServer implements HttpGetter {

    private final Map<String, Response> routes = new HashMap<>();
    private final Set<String> unreachable = new HashSet<>();
    private boolean down;

    FakeServer route(String path, int status, String body) {
        routes.put(path, new Response(status, body));
        return this;
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
}
