package io.heartgate.scheduler.admin;

import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.scheduler.metrics.ModelSignals;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The fleet's models as {@code GET /admin/models} shows them: each model (by normalised name), the
 * nodes that list it, those of them that are routable and that have it loaded, and the digest each
 * reported, with {@code digestsDiffer} when they disagree on what the name means (one node's
 * {@code llama3:8b} is not another's), and its load: requests on its nodes, its capacity, its queue and
 * its saturation ({@link ModelSignals}, the autoscaling signal). Pure: built from one table snapshot
 * and the last signals.
 */
final class ModelsView {

    private ModelsView() {
    }

    private static final class Entry {
        String name;
        final Set<String> nodes = new LinkedHashSet<>();
        final Set<String> routable = new LinkedHashSet<>();
        final Set<String> loadedOn = new LinkedHashSet<>();
        final Map<String, String> digests = new TreeMap<>();
    }

    static JsonObject of(TableSnapshot snapshot) {
        return of(snapshot, Map.of());
    }

    /** As {@link #of(TableSnapshot)}, with each model's load and queue from {@code signals} (by normalised name). */
    static JsonObject of(TableSnapshot snapshot, Map<String, ModelSignals.Signal> signals) {
        Map<String, Entry> models = new TreeMap<>();
        for (Node n : snapshot.nodes()) { // node-id order
            for (String m : n.heartbeat().models()) {
                Entry e = models.computeIfAbsent(ModelNames.normalize(m), k -> new Entry());
                if (e.name == null) {
                    e.name = m;
                }
                e.nodes.add(n.id());
                if (n.routable()) {
                    e.routable.add(n.id());
                }
            }
            for (ModelInfo info : n.heartbeat().modelInfo()) {
                Entry e = models.get(ModelNames.normalize(info.name()));
                if (e != null && info.digest() != null) {
                    e.digests.put(n.id(), info.digest());
                }
            }
            for (LoadedModel l : n.heartbeat().loaded()) {
                Entry e = models.get(ModelNames.normalize(l.name()));
                if (e != null) {
                    e.loadedOn.add(n.id());
                }
            }
        }
        JsonArray out = new JsonArray();
        models.forEach((key, e) -> {
            JsonObject digests = new JsonObject();
            e.digests.forEach(digests::put);
            ModelSignals.Signal s = signals.get(key);
            out.add(new JsonObject()
                    .put("inFlight", s == null ? 0 : s.inFlight())
                    .put("capacity", s == null || s.capacity() == 0 ? null : s.capacity())
                    .put("queued", s == null ? 0 : s.queued())
                    .put("queueWaitSeconds", s == null ? 0.0 : s.queueWaitSeconds())
                    .put("saturation", s == null || Double.isNaN(s.saturation()) ? null : s.saturation())
                    .put("name", e.name)
                    .put("nodes", new JsonArray(e.nodes.stream().toList()))
                    .put("routableOn", new JsonArray(e.routable.stream().toList()))
                    .put("loadedOn", new JsonArray(e.loadedOn.stream().toList()))
                    .put("digests", digests)
                    .put("digestsDiffer", new HashSet<>(e.digests.values()).size() > 1));
        });
        return new JsonObject().put("models", out);
    }
}
