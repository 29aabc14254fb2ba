package io.heartgate.scheduler.table;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Holds one immutable view of the alive-node table, built once per change and read by the request
 * path without locks. Nodes are in node-id order, the order balancers use to break ties.
 *
 * <p>Candidates per model are indexed at build time so a pick never scans nodes that cannot serve the
 * request: {@link #candidates(String)} is a map lookup.
 */
public final class TableSnapshot {

    /** The snapshot of an empty table. */
    public static final TableSnapshot EMPTY = new TableSnapshot(0, List.of());

    private final long version;
    private final long structure;
    private final List<Node> nodes;
    private final Map<String, Node> byId;
    private final List<Node> routable;
    private final List<Node> routableForAnyModel;
    private final Map<String, List<Node>> routableByModel;
    private final Set<String> heldEverywhere;

    /** Builds a snapshot of {@code nodes}, which must be sorted by node id; every one a change of structure. */
    public TableSnapshot(long version, List<Node> nodes) {
        this(version, version, nodes);
    }

    /**
     * Builds a snapshot of {@code nodes}, which must be sorted by node id, at {@code structure}: the
     * count of changes to which nodes are listed or to what routing reads first of them ({@link #structure}).
     */
    public TableSnapshot(long version, long structure, List<Node> nodes) {
        this.version = version;
        this.structure = structure;
        this.nodes = List.copyOf(nodes);
        Map<String, Node> ids = new HashMap<>(nodes.size() * 2);
        List<Node> up = new ArrayList<>();
        List<Node> any = new ArrayList<>();
        Map<String, List<Node>> byModel = new HashMap<>();
        Set<String> coldSomewhere = new HashSet<>();
        for (Node n : nodes) {
            ids.put(n.id(), n);
            if (!n.routable()) {
                continue;
            }
            up.add(n);
            if (n.models().isEmpty()) {
                any.add(n);
            }
            for (String m : n.models()) {
                byModel.computeIfAbsent(m, k -> new ArrayList<>()).add(n);
                if (!n.holdsInMemory(m)) {
                    coldSomewhere.add(m);
                }
            }
        }
        for (Node n : any) {
            for (String m : byModel.keySet()) {
                if (!n.holdsInMemory(m)) {
                    coldSomewhere.add(m);
                }
            }
        }
        Set<String> held = new HashSet<>(byModel.keySet());
        held.removeAll(coldSomewhere);
        this.heldEverywhere = Set.copyOf(held);
        // Nodes that serve any model are candidates for every model; merge keeping node-id order.
        Map<String, List<Node>> frozen = new HashMap<>(byModel.size() * 2);
        byModel.forEach((model, list) -> frozen.put(model, any.isEmpty()
                ? List.copyOf(list) : mergeById(list, any)));
        this.byId = Collections.unmodifiableMap(ids);
        this.routable = List.copyOf(up);
        this.routableForAnyModel = List.copyOf(any);
        this.routableByModel = Collections.unmodifiableMap(frozen);
    }

    private static List<Node> mergeById(List<Node> a, List<Node> b) {
        List<Node> out = new ArrayList<>(a.size() + b.size());
        int i = 0;
        int j = 0;
        while (i < a.size() || j < b.size()) {
            if (j == b.size() || (i < a.size() && a.get(i).id().compareTo(b.get(j).id()) < 0)) {
                out.add(a.get(i++));
            } else {
                out.add(b.get(j++));
            }
        }
        return List.copyOf(out);
    }

    /** Returns a number that grows with every published change. */
    public long version() {
        return version;
    }

    /**
     * Returns a number that grows when a node joins, leaves or expires, or changes its state, weight,
     * URL, models or interval, and stays when snapshots differ only in renewals (load figures, models
     * held in memory, when each was last seen): a listener that reads only membership and states
     * skips a snapshot whose structure it has seen.
     */
    public long structure() {
        return structure;
    }

    /** Returns every listed node, routable or not, in node-id order. */
    public List<Node> nodes() {
        return nodes;
    }

    /** Returns the node with this id, or {@code null}. */
    public Node node(String id) {
        return byId.get(id);
    }

    /** Returns the routable nodes, in node-id order. */
    public List<Node> routable() {
        return routable;
    }

    /**
     * Says whether every routable node serving {@code normalizedModel} holds it in memory by its
     * heartbeat ({@link Node#holdsInMemory}); false for a model only nodes serving any model serve.
     */
    public boolean heldEverywhere(String normalizedModel) {
        return heldEverywhere.contains(normalizedModel);
    }

    /**
     * Returns the routable nodes that serve {@code normalizedModel}, in node-id order; all routable
     * nodes when the model is {@code null} (the request names none). Never null; empty when none.
     */
    public List<Node> candidates(String normalizedModel) {
        if (normalizedModel == null) {
            return routable;
        }
        List<Node> list = routableByModel.get(normalizedModel);
        return list != null ? list : routableForAnyModel;
    }
}
