package io.heartgate.scheduler.routing;

import io.heartgate.scheduler.balancer.AffinityBalancer;
import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.balancer.HashRing;
import io.heartgate.scheduler.balancer.Picker;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What routing works out of one table snapshot, kept with it and dropped with it: each model's
 * {@link Picker} over its whole candidate list ({@link Balancer#over}, built once), under affinity
 * the model's {@link HashRing}, and warm first's last narrowed list per model with a picker of its
 * own. At most {@value #MODELS_KEPT} models per snapshot: clients naming ever new models keep
 * nothing. Pickers and rings keep their lists by position, so a snapshot of the same
 * {@linkplain TableSnapshot#structure structure} (the same nodes, states, weights and models, only
 * their figures renewed) takes them over from the one before: a renewal, published every few tens
 * of milliseconds, then costs no new picker, each of which reads the whole list.
 * Warm first's lists depend on the models each node holds in memory, which renewals change: those
 * start afresh. Thread-safe (two loops on two snapshots at once only build one twice).
 */
final class SnapshotPickers {

    private static final int MODELS_KEPT = 1024;

    /** Warm first's narrowed list of a model, and its picker once a pick needed one. */
    private record Narrowed(List<Node> list, Picker picker) {
    }

    private static final class Kept {
        final TableSnapshot snapshot;
        final ConcurrentHashMap<String, Picker> pickers;
        final ConcurrentHashMap<String, HashRing> rings;
        final ConcurrentHashMap<String, Narrowed> narrowed = new ConcurrentHashMap<>();

        Kept(TableSnapshot snapshot) {
            this(snapshot, new ConcurrentHashMap<>(), new ConcurrentHashMap<>());
        }

        private Kept(TableSnapshot snapshot, ConcurrentHashMap<String, Picker> pickers,
                     ConcurrentHashMap<String, HashRing> rings) {
            this.snapshot = snapshot;
            this.pickers = pickers;
            this.rings = rings;
        }

        /** Returns what {@code next} keeps: this one's pickers and rings when it has the same structure. */
        Kept next(TableSnapshot next) {
            return next.sameStructure(snapshot) ? new Kept(next, pickers, rings) : new Kept(next);
        }
    }

    private final Balancer balancer;
    private volatile Kept kept = new Kept(TableSnapshot.EMPTY);

    SnapshotPickers(Balancer balancer) {
        this.balancer = balancer;
    }

    /** Picks among {@code list}, the whole candidate list of {@code model} in {@code snapshot}. */
    Node pickWhole(TableSnapshot snapshot, String model, List<Node> list) {
        Kept k = kept(snapshot);
        Picker picker = k.pickers.get(key(model));
        if (picker == null) {
            if (k.pickers.size() >= MODELS_KEPT) {
                return balancer.pick(list).orElseThrow();
            }
            picker = balancer.over(list);
            k.pickers.put(key(model), picker);
        }
        return picker.pick(list);
    }

    /**
     * Picks among {@code list}, made for one request: by its own picker when it is warm first's
     * narrowed list of {@code model} kept here, else by the balancer's pick, which keeps no state.
     */
    Node pickAmong(TableSnapshot snapshot, String model, List<Node> list) {
        Narrowed n = model == null ? null : kept(snapshot).narrowed.get(model);
        if (n == null || n.list() != list) {
            return balancer.pick(list).orElseThrow();
        }
        if (n.picker() == null) {
            n = new Narrowed(list, balancer.over(list));
            kept(snapshot).narrowed.put(model, n);
        }
        return n.picker().pick(list);
    }

    /** Returns the ring of {@code base}, the whole candidate list of {@code model}, under {@code affinity}. */
    HashRing ring(TableSnapshot snapshot, String model, List<Node> base, AffinityBalancer affinity) {
        Kept k = kept(snapshot);
        HashRing ring = k.rings.get(key(model));
        if (ring == null) {
            ring = affinity.ring(base);
            if (k.rings.size() < MODELS_KEPT) {
                k.rings.put(key(model), ring);
            }
        }
        return ring;
    }

    /** Returns warm first's last narrowed list of {@code model} in {@code snapshot}, or {@code null}. */
    List<Node> narrowed(TableSnapshot snapshot, String model) {
        Narrowed n = kept(snapshot).narrowed.get(model);
        return n == null ? null : n.list();
    }

    /** Keeps {@code list} as warm first's narrowed list of {@code model} in {@code snapshot}. */
    void narrowedTo(TableSnapshot snapshot, String model, List<Node> list) {
        Kept k = kept(snapshot);
        if (k.narrowed.size() < MODELS_KEPT || k.narrowed.containsKey(model)) {
            k.narrowed.put(model, new Narrowed(list, null));
        }
    }

    private Kept kept(TableSnapshot snapshot) {
        Kept k = kept;
        if (k.snapshot != snapshot) {
            k = k.next(snapshot);
            kept = k;
        }
        return k;
    }

    private static String key(String model) {
        return model == null ? "" : model;
    }
}
