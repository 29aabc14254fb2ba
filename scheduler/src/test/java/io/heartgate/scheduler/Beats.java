package io.heartgate.scheduler;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import java.util.List;

/** Builds heartbeats for scheduler tests. */
public final class Beats {

    private Beats() {
    }

    /** Returns an UP heartbeat of {@code id} with weight 1, a 1 s interval, instance "i1" and seq 1. */
    public static Heartbeat.Builder of(String id) {
        return Heartbeat.builder(id, "http://" + id + ".internal:11434")
                .instance("i1")
                .seq(1L)
                .state(NodeState.UP)
                .intervalMs(1000);
    }

    public static Heartbeat weighted(String id, int weight) {
        return of(id).weight(weight).build();
    }

    public static Heartbeat serving(String id, String... models) {
        return of(id).models(List.of(models)).build();
    }
}
