package io.heartgate.scheduler.admin;

import io.heartgate.scheduler.replicas.ReplicaView;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;

/**
 * The JSON of {@code /admin/replicas} and the dashboard's replica list: this replica's id, every
 * live replica (id, version, proxy address, queue depth, age of its last heartbeat), and whether
 * limits are shared through Kafka or split into this replica's share while Kafka is away.
 */
final class ReplicasView {

    private ReplicasView() {
    }

    static JsonObject of(ReplicaView view, Instant now) {
        JsonArray replicas = new JsonArray();
        for (ReplicaView.Replica r : view.replicas()) {
            replicas.add(new JsonObject()
                    .put("id", r.id())
                    .put("self", r.self())
                    .put("version", r.version())
                    .put("address", r.address())
                    .put("queueDepth", r.queueDepth())
                    .put("lastSeenAgeMs", Math.max(0, Duration.between(r.heardAt(), now).toMillis())));
        }
        return new JsonObject()
                .put("self", view.self())
                .put("replicas", replicas)
                .put("limits", limits(view));
    }

    /** Returns how limits are held now, in a few words: {@code "shared"}, or this replica's share. */
    static String limits(ReplicaView view) {
        return view.degraded() ? "local share: each limit / " + view.shares() + " (events topic unreachable)" : "shared";
    }
}
