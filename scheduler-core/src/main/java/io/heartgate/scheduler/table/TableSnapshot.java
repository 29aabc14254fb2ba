package io.heartgate.scheduler.table;

import java.util.Arrays;
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
    private final Layout layout;
    private final List<Node> nodes;
    private final List<Node> routable;
    private final List<Node> routableForAnyModel;
    private final Map<String, List<Node>> routableByModel;
    private final Set<String> heldEverywhere;

    /**
     * Where each list of a snapshot finds its nodes, by position in the id-ordered list: all a
     * snapshot works out of its nodes that a renewal (new figures, the same structure) cannot change,
     * so renewals share it and only fill their lists from it. {@code lineage} is the table it comes
     * from: structure numbers are compared only within one.
     */
    private record Layout(Object lineage, int[] routable, int[] any, Map<String, int[]> byModel,
                          long shortestIntervalMs, long longestIntervalMs) {
    }

    /** Builds a snapshot of {@code nodes}, which must be sorted by node id; every one a change of structure. */
    public TableSnapshot(long version, List<Node> nodes) {
        this(version, version, new Object(), nodes);
    }

    /**
     * Builds a snapshot of {@code nodes}, which must be sorted by node id, at {@code structure}: the
     * count of changes to which nodes are listed or to what routing reads first of them
     * ({@link #structure}) in the table {@code lineage} stands for.
     */
    public TableSnapshot(long version, long structure, Object lineage, List<Node> nodes) {
        this(version, structure, layout(lineage, nodes), nodes.toArray(new Node[0]), null);
    }

    /** Builds a snapshot of {@code all}, which it owns from then on. */
    private TableSnapshot(long version, long structure, Layout layout, Node[] all, Set<String> heldEverywhere) {
        this.version = version;
        this.structure = structure;
        this.layout = layout;
        this.nodes = Collections.unmodifiableList(Arrays.asList(all));
        this.routable = fill(all, layout.routable());
        this.routableForAnyModel = fill(all, layout.any());
        Map<String, List<Node>> byModel = new HashMap<>(layout.byModel().size() * 2);
        layout.byModel().forEach((model, positions) -> byModel.put(model, fill(all, positions)));
        this.routableByModel = Collections.unmodifiableMap(byModel);
        this.heldEverywhere = heldEverywhere != null ? heldEverywhere : heldEverywhere(routableByModel, routableForAnyModel);
    }

    /**
     * Returns the snapshot of {@code nodes} (copied), the same nodes as this one's in the same order with the
     * same {@link #structure} (only their heartbeats renewed), at {@code version}: it reuses this
     * one's positions, and its set of models held everywhere unless {@code inMemoryChanged} (a node's
     * models in memory changed). Costs a copy of the lists, none of the work of finding who serves
     * what: the way to publish renewals of a large table often.
     *
     * @throws IllegalArgumentException when {@code nodes} is not as long as this snapshot's list
     */
    public TableSnapshot renewed(long version, Node[] nodes, boolean inMemoryChanged) {
        if (nodes.length != this.nodes.size()) {
            throw new IllegalArgumentException("a renewal lists the same nodes: " + this.nodes.size() + ", not "
                    + nodes.length);
        }
        return new TableSnapshot(version, structure, layout, nodes.clone(), inMemoryChanged ? null : heldEverywhere);
    }

    /**
     * Says whether {@code other} comes from the same table at the same structure as this one: the same
     * nodes in the same order, each with the same state, weight, URL, models and interval.
     */
    public boolean sameStructure(TableSnapshot other) {
        return other == this || other.layout.lineage() == layout.lineage() && other.structure == structure
                && other.nodes.size() == nodes.size();
    }

    private static Layout layout(Object lineage, List<Node> nodes) {
        IntList up = new IntList();
        IntList any = new IntList();
        Map<String, IntList> byModel = new HashMap<>();
        long shortest = nodes.isEmpty() ? 0 : Long.MAX_VALUE;
        long longest = 0;
        for (int i = 0; i < nodes.size(); i++) {
            Node n = nodes.get(i);
            shortest = Math.min(shortest, n.heartbeat().intervalMs());
            longest = Math.max(longest, n.heartbeat().intervalMs());
            if (!n.routable()) {
                continue;
            }
            up.add(i);
            if (n.models().isEmpty()) {
                any.add(i);
            }
            for (String m : n.models()) {
                byModel.computeIfAbsent(m, k -> new IntList()).add(i);
            }
        }
        // Nodes that serve any model are candidates for every model; merge keeping node-id order.
        int[] anyPositions = any.toArray();
        Map<String, int[]> frozen = new HashMap<>(byModel.size() * 2);
        byModel.forEach((model, list) -> frozen.put(model, merge(list.toArray(), anyPositions)));
        return new Layout(lineage, up.toArray(), anyPositions,
                Collections.unmodifiableMap(frozen), shortest, longest);
    }

    /** Returns the models every routable node serving them holds in memory ({@link Node#holdsInMemory}). */
    private static Set<String> heldEverywhere(Map<String, List<Node>> byModel, List<Node> any) {
        Set<String> held = new HashSet<>();
        byModel.forEach((model, list) -> {
            for (Node n : list) {
                if (!n.holdsInMemory(model)) {
                    return;
                }
            }
            held.add(model);
        });
        return Set.copyOf(held);
    }

    /** Returns the nodes at {@code positions} (ascending) of {@code all}, in order. */
    private static List<Node> fill(Node[] all, int[] positions) {
        Node[] out = new Node[positions.length];
        for (int i = 0; i < positions.length; i++) {
            out[i] = all[positions[i]];
        }
        return List.of(out);
    }

    /** Merges two ascending position lists without duplicates. */
    private static int[] merge(int[] a, int[] b) {
        if (b.length == 0) {
            return a;
        }
        int[] out = new int[a.length + b.length];
        int i = 0;
        int j = 0;
        int k = 0;
        while (i < a.length || j < b.length) {
            if (j == b.length || i < a.length && a[i] < b[j]) {
                out[k++] = a[i++];
            } else if (i == a.length || b[j] < a[i]) {
                out[k++] = b[j++];
            } else {
                out[k++] = a[i++];
                j++;
            }
        }
        return Arrays.copyOf(out, k);
    }

    /** A growable list of ints, for building position lists without boxing. */
    private static final class IntList {
        private int[] values = new int[8];
        private int size;

        void add(int v) {
            if (size == values.length) {
                values = Arrays.copyOf(values, size * 2);
            }
            values[size++] = v;
        }

        int[] toArray() {
            return Arrays.copyOf(values, size);
        }
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

    /** Returns the longest heartbeat interval among the listed nodes, in ms; 0 when none is listed. */
    public long longestIntervalMs() {
        return layout.longestIntervalMs();
    }

    /** Returns the shortest heartbeat interval among the listed nodes, in ms; 0 when none is listed. */
    public long shortestIntervalMs() {
        return layout.shortestIntervalMs();
    }

    /**
     * Returns the node with this id, or {@code null}: a binary search of the id-ordered list, so a
     * structural publish builds no map of every node (asked rarely: tombstones, lost streams).
     */
    public Node node(String id) {
        int lo = 0;
        int hi = nodes.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int c = nodes.get(mid).id().compareTo(id);
            if (c < 0) {
                lo = mid + 1;
            } else if (c > 0) {
                hi = mid - 1;
            } else {
                return nodes.get(mid);
            }
        }
        return null;
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
