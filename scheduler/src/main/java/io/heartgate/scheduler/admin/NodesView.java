package io.heartgate.scheduler.admin;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.table.TokenLoad;
import io.heartgate.scheduler.usage.TrafficView;
import io.vertx.core.MultiMap;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The nodes as the admin port shows them, from one table snapshot: each node's JSON, the filters
 * and pages of {@code GET /admin/nodes} ({@link Query}), and the counts of {@code GET /admin/summary}.
 * A page starts after the node id its cursor names (the snapshot is in node-id order, so a page is
 * found by binary search and stays right while nodes come and go between pages); a page may instead
 * start at an offset into the matching nodes and count them all, which is what a scrolled table needs.
 * Pure, but for the traffic counters it reads.
 */
final class NodesView {

    /** The most nodes one page may ask for. */
    static final int MAX_LIMIT = 10_000;

    private final EjectionView health;
    private final int missedHeartbeats;
    private final TrafficView traffic;

    NodesView(EjectionView health, int missedHeartbeats, TrafficView traffic) {
        this.health = health;
        this.missedHeartbeats = missedHeartbeats;
        this.traffic = traffic;
    }

    /**
     * Which nodes a listing shows.
     *
     * @param states the states shown, or {@code null} for all
     * @param model a model the node must list (normalised), or {@code null}
     * @param routable whether the node must (not) take requests now, or {@code null} for either
     * @param prefix what the node id must start with, or {@code null}
     * @param limit the most nodes in the answer, or 0: every node, streamed, without a cursor
     * @param after the node id the page starts after (from the cursor), or {@code null}
     * @param offset how many matching nodes the page skips, with the count of all of them in the
     *     answer, or -1: none skipped, none counted
     */
    record Query(Set<NodeState> states, String model, Boolean routable, String prefix, int limit, String after,
                 int offset) {

        /** Every node, unpaged. */
        static final Query ALL = new Query(null, null, null, null, 0, null, -1);

        /**
         * Reads {@code state} (names, comma-separated), {@code model}, {@code routable}
         * ({@code true} or {@code false}), {@code prefix}, {@code limit} (1 to {@link #MAX_LIMIT}),
         * {@code cursor} and {@code offset} (0 or more, with {@code limit}, not with {@code cursor}).
         *
         * @throws IllegalArgumentException naming the parameter that is wrong
         */
        static Query parse(MultiMap params) {
            Set<NodeState> states = null;
            String state = params.get("state");
            if (state != null) {
                states = EnumSet.noneOf(NodeState.class);
                for (String s : state.split(",")) {
                    try {
                        states.add(NodeState.valueOf(s.trim().toUpperCase(Locale.ROOT)));
                    } catch (IllegalArgumentException e) {
                        throw new IllegalArgumentException("state: not a node state: '" + s.trim() + "' (one of "
                                + List.of(NodeState.values()) + ")");
                    }
                }
            }
            String model = params.get("model");
            String routable = params.get("routable");
            if (routable != null && !routable.equals("true") && !routable.equals("false")) {
                throw new IllegalArgumentException("routable: must be true or false, was '" + routable + "'");
            }
            int limit = 0;
            String l = params.get("limit");
            if (l != null) {
                try {
                    limit = Integer.parseInt(l.trim());
                } catch (NumberFormatException e) {
                    limit = -1;
                }
                if (limit < 1 || limit > MAX_LIMIT) {
                    throw new IllegalArgumentException("limit: must be 1 to " + MAX_LIMIT + ", was '" + l + "'");
                }
            }
            String cursor = params.get("cursor");
            String after = null;
            if (cursor != null) {
                if (limit == 0) {
                    throw new IllegalArgumentException("cursor: only with limit");
                }
                try {
                    after = new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.UTF_8);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("cursor: not one this server gave");
                }
            }
            int offset = -1;
            String o = params.get("offset");
            if (o != null) {
                if (limit == 0 || cursor != null) {
                    throw new IllegalArgumentException("offset: only with limit, and not with cursor");
                }
                try {
                    offset = Integer.parseInt(o.trim());
                } catch (NumberFormatException e) {
                    offset = -1;
                }
                if (offset < 0) {
                    throw new IllegalArgumentException("offset: must be 0 or more, was '" + o + "'");
                }
            }
            String prefix = params.get("prefix");
            return new Query(states, model == null || model.isBlank() ? null : ModelNames.normalize(model),
                    routable == null ? null : Boolean.valueOf(routable), prefix == null || prefix.isEmpty() ? null : prefix,
                    limit, after, offset);
        }
    }

    /**
     * One page: its nodes, the cursor of the next ({@code null} on the last), and with an offset the
     * number of nodes the filters keep in all (else -1).
     */
    record Page(List<Node> nodes, String cursor, int total) {
    }

    /** Says whether the node takes requests now: routable by its state, and not ejected. */
    boolean routable(Node n) {
        return n.routable() && !health.isEjected(n.id());
    }

    /** Says whether {@code q}'s filters (not its page) keep {@code n}. */
    boolean matches(Query q, Node n) {
        return (q.states() == null || q.states().contains(n.state()))
                && (q.model() == null || n.models().contains(q.model()))
                && (q.prefix() == null || n.id().startsWith(q.prefix()))
                && (q.routable() == null || q.routable() == routable(n));
    }

    /**
     * Returns the index in {@code s} of the first node a listing by {@code q} may show: after its
     * cursor's node id and at its prefix, found by binary search.
     */
    static int start(TableSnapshot s, Query q) {
        int from = 0;
        if (q.after() != null) {
            from = firstAbove(s.nodes(), q.after(), false);
        }
        if (q.prefix() != null) {
            from = Math.max(from, firstAbove(s.nodes(), q.prefix(), true));
        }
        return from;
    }

    /** Returns the index of the first node whose id is above {@code id} (or equal, when {@code inclusive}). */
    private static int firstAbove(List<Node> nodes, String id, boolean inclusive) {
        int lo = 0;
        int hi = nodes.size();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            int c = nodes.get(mid).id().compareTo(id);
            if (c < 0 || c == 0 && !inclusive) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Says whether no node at index {@code i} or later can match {@code q}'s prefix any more. */
    static boolean pastPrefix(TableSnapshot s, Query q, int i) {
        return q.prefix() != null && !s.nodes().get(i).id().startsWith(q.prefix());
    }

    /**
     * Returns the page {@code q} asks for ({@code q.limit()} at least 1). With an offset it reads on
     * to the end to count the matching nodes: one pass over the table's nodes from the prefix on.
     */
    Page page(TableSnapshot s, Query q) {
        List<Node> out = new ArrayList<>(Math.min(q.limit(), 256));
        List<Node> nodes = s.nodes();
        boolean counting = q.offset() >= 0;
        int matched = 0;
        boolean more = false;
        for (int i = start(s, q); i < nodes.size() && !pastPrefix(s, q, i); i++) {
            Node n = nodes.get(i);
            if (!matches(q, n)) {
                continue;
            }
            if (matched++ < Math.max(0, q.offset())) {
                continue;
            }
            if (out.size() == q.limit()) { // one more matches: there is a next page
                more = true;
                if (!counting) {
                    break;
                }
            } else {
                out.add(n);
            }
        }
        String next = more ? cursor(out.get(out.size() - 1).id()) : null;
        return new Page(out, next, counting ? matched : -1);
    }

    /** Returns the cursor of the page after the node {@code lastId}. */
    static String cursor(String lastId) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(lastId.getBytes(StandardCharsets.UTF_8));
    }

    /** Returns {@code GET /admin/summary}: nodes, those routable, and the counts by state, model and backend. */
    JsonObject summary(TableSnapshot s) {
        Map<String, Integer> byState = new TreeMap<>();
        Map<String, Integer> byModel = new TreeMap<>();
        Map<String, Integer> byBackend = new TreeMap<>();
        int routable = 0;
        for (Node n : s.nodes()) {
            byState.merge(n.state().name(), 1, Integer::sum);
            for (String m : n.models()) {
                byModel.merge(m, 1, Integer::sum);
            }
            String backend = n.heartbeat().backend();
            byBackend.merge(backend == null ? "unknown" : backend, 1, Integer::sum);
            if (routable(n)) {
                routable++;
            }
        }
        return new JsonObject().put("nodes", s.nodes().size()).put("routable", routable)
                .put("byState", new JsonObject(new TreeMap<>(byState)))
                .put("byModel", new JsonObject(new TreeMap<>(byModel)))
                .put("byBackend", new JsonObject(new TreeMap<>(byBackend)));
    }

    /** Returns one node as the admin port shows it, at {@code now}. */
    JsonObject node(Node n, Instant now) {
        var hb = n.heartbeat();
        JsonObject o = new JsonObject()
                .put("nodeId", n.id())
                .put("url", n.url())
                .put("state", n.state().name())
                .put("weight", n.weight())
                .put("capacity", hb.capacity())
                .put("models", new JsonArray(hb.models()))
                .put("loaded", new JsonArray(hb.loaded().stream().map(LoadedModel::name).toList()))
                .put("routable", routable(n))
                .put("lastHeartbeatAgeMs", Math.max(0, Duration.between(n.lastSeen(), now).toMillis()))
                .put("inFlight", n.inFlight().get())
                .put("tokenLoad", tokenLoad(n.inFlight().tokens()))
                .put("load", load(hb.load()))
                .put("backend", hb.backend())
                .put("intervalMs", hb.intervalMs())
                .put("expiresInMs", Duration.between(now, n.expiresAt(missedHeartbeats)).toMillis())
                .put("instance", hb.instance())
                .put("seq", hb.seq())
                .put("gpus", gpus(hb.gpus()))
                .put("requests", traffic.requests(n.id()))
                .put("errors", traffic.errors(n.id()));
        var ejection = health.ejection(n.id());
        if (!n.routable()) {
            o.put("notRoutableReason", "state " + n.state().name());
        } else if (ejection.isPresent()) {
            o.put("notRoutableReason", ejection.get().describe());
        }
        o.put("ejected", ejection.isPresent());
        ejection.ifPresent(e -> o.put("ejectedForMs", Duration.between(now, e.until()).toMillis()));
        return o;
    }

    private static JsonObject load(Load load) {
        JsonObject o = new JsonObject();
        if (load.inFlight() != null) {
            o.put("inFlight", load.inFlight());
        }
        if (load.queued() != null) {
            o.put("queued", load.queued());
        }
        if (load.kvCacheUsage() != null) {
            o.put("kvCacheUsage", load.kvCacheUsage());
        }
        if (load.prefixCacheHitRate() != null) {
            o.put("prefixCacheHitRate", load.prefixCacheHitRate());
        }
        if (load.prefillTps() != null) {
            o.put("prefillTps", load.prefillTps());
        }
        return o;
    }

    /** This scheduler's token load on a node and the prefill speeds it learned there (sticky affinity's inputs). */
    private static JsonObject tokenLoad(TokenLoad t) {
        JsonObject learned = new JsonObject();
        t.learned().forEach(learned::put);
        return new JsonObject().put("prefillBacklogTokens", t.backlog()).put("prefilling", t.prefilling())
                .put("tokensPerByte", Math.round(t.tokensPerByte() * 1000) / 1000.0).put("prefillTps", learned);
    }

    private static JsonArray gpus(List<Gpu> gpus) {
        JsonArray a = new JsonArray();
        for (Gpu g : gpus) {
            a.add(new JsonObject().put("name", g.name()).put("utilization", g.utilization())
                    .put("memoryUsedMiB", g.memoryUsedMiB()).put("memoryTotalMiB", g.memoryTotalMiB()));
        }
        return a;
    }
}
