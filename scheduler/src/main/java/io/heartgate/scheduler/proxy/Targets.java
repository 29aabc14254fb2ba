package io.heartgate.scheduler.proxy;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Parses each node URL into a {@link Target} once, for every event loop. Thread-safe. */
final class Targets {

    private final Map<String, Target> byUrl = new ConcurrentHashMap<>();

    /** Returns the parsed target of a node URL that the heartbeat rules accepted. */
    Target of(String url) {
        Target t = byUrl.get(url);
        if (t == null) {
            if (byUrl.size() > 100_000) {
                byUrl.clear(); // URLs of nodes long gone; they are parsed again if they come back
            }
            t = Target.of(url);
            byUrl.put(url, t);
        }
        return t;
    }
}
