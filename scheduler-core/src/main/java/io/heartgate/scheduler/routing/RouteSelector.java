package io.heartgate.scheduler.routing;

import io.heartgate.scheduler.affinity.AffinityKeys;
import io.heartgate.scheduler.balancer.AffinityBalancer;
import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.balancer.HashRing;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.status.Ramp;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.time.Ticker;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleSupplier;

/**
 * Chooses the node for one attempt of a request from a table snapshot: the routable nodes that
 * serve the request's model, less the nodes this request already tried, less the nodes passive
 * health ejected; the balancer picks among what is left.
 *
 * <p><b>Panic mode</b>: when every remaining candidate is ejected, ejection is more likely wrong
 * than every node dead, so they are all tried anyway rather than failing every request until the
 * back-off ends. Refusals: {@code no_upstream} when no node is routable at all, {@code
 * model_not_found} when none serves the model, {@code upstream_unreachable} when every candidate
 * was tried, and {@code overloaded} ({@link Route.Refused#FULL}) when every candidate of known
 * capacity is at it: the route's {@link Lease} takes the request's slot when the node is chosen, so
 * no node is ever sent more than its capacity by this scheduler. With slow start, a node warming up stays a candidate only with the probability of its
 * share; with {@link WarmFirst}, the nodes holding the model in memory are preferred. Under the
 * {@code affinity} strategy, a request with a key walks the ring of every candidate for its model,
 * passing over the nodes set aside (tried, ejected, cold, ramped out), so the key keeps its place
 * while they are; each route says how it was placed ({@link AffinityPick}). Pure apart
 * from the balancer's own rotation state, the random draws and warm first's last list per model;
 * allocates nothing in the common case of a first attempt with no node ejected and none ramping,
 * warm first's narrowed list being reused while it holds the same nodes. What it works out of a
 * snapshot (each model's picker and ring) is kept with that snapshot only.
 */
public final class RouteSelector {

    private final Balancer balancer;
    /** The balancer when the strategy is affinity, else {@code null}. */
    private final AffinityBalancer affinity;
    /** Whether requests join their node's prefill backlog: only the sticky rule reads it, so others pay nothing. */
    private final boolean tokenLoad;
    private final AffinityKeys keys;
    private final Ramp ramp;
    private final DoubleSupplier random;
    private final WarmFirst warmFirst;
    private final Clock clock;
    /** What is worked out of each snapshot (pickers, rings, warm first's narrowed lists), kept with it. */
    private final SnapshotPickers pickers;
    /** Which node made each response of the Responses API relayed, for the requests that continue one. */
    private final ResponseHomes responses;

    /** Creates a selector picking with {@code balancer}, without slow start or warm-first. */
    public RouteSelector(Balancer balancer) {
        this(balancer, Ramp.NONE, () -> 0.0, WarmFirst.OFF, Clock.systemUTC());
    }

    /** As {@link #RouteSelector(Balancer, Ramp, DoubleSupplier, WarmFirst, Clock)}, with the default affinity key sources. */
    public RouteSelector(Balancer balancer, Ramp ramp, DoubleSupplier random, WarmFirst warmFirst, Clock clock) {
        this(balancer, ramp, random, warmFirst, clock, AffinityKeys.DEFAULTS);
    }

    /**
     * Creates a selector picking with {@code balancer} whose ramping nodes ({@code ramp}) each stay a
     * candidate with the probability of their share, drawn from {@code random} (uniform in [0, 1)), so
     * that every strategy gives them that fraction of what it would; when every candidate is drawn
     * out, all stay. {@code warmFirst} then narrows what is left to the nodes with the model in memory;
     * {@code clock} (the table's) times the answers it counts as evidence. {@code keys} say where
     * requests' affinity keys come from, when the balancer is the affinity strategy's.
     */
    public RouteSelector(Balancer balancer, Ramp ramp, DoubleSupplier random, WarmFirst warmFirst, Clock clock,
                         AffinityKeys keys) {
        this.balancer = balancer;
        this.pickers = new SnapshotPickers(balancer);
        this.affinity = balancer.byKey();
        this.tokenLoad = affinity != null && affinity.sticky();
        this.keys = keys;
        this.ramp = ramp;
        this.random = random;
        this.warmFirst = warmFirst;
        this.clock = clock;
        this.responses = new ResponseHomes(ResponseHomes.DEFAULT_SIZE, ResponseHomes.DEFAULT_TTL,
                Ticker.ofMillis(clock::millis));
    }

    /** Returns which node made each response of the Responses API relayed (a follow-up must go there). */
    public ResponseHomes responses() {
        return responses;
    }

    /** Says whether requests join their node's prefill backlog and its usage teaches it (the sticky rule). */
    public boolean keepsTokenLoad() {
        return tokenLoad;
    }

    /** Returns where affinity keys come from when the strategy uses them, else {@code null}: nothing to read. */
    public AffinityKeys affinityKeys() {
        return affinity == null ? null : keys;
    }

    /**
     * Returns the model {@code node} has to load for a request of {@code facts}, as far as warm-first
     * tracks it: the request's model when warm-first is on and the node's heartbeat does not show the
     * model in memory; else {@code null}. Such requests count toward the node being warm for the model
     * while they are in flight, so that the requests after them queue behind one load.
     */
    public String loadingFor(Node node, RequestFacts facts) {
        String model = facts.model();
        return warmFirst.enabled() && model != null && !node.holdsInMemory(model) ? model : null;
    }

    /**
     * Notes that {@code node} answered a request with a success head: with warm-first, the node then
     * counts as holding the request's model in memory at once, before its next heartbeat says so.
     */
    public void answered(Node node, RequestFacts facts) {
        String model = facts.model();
        if (warmFirst.enabled() && model != null && !node.holdsInMemory(model)) {
            node.inFlight().served(model, clock.millis());
        }
    }

    /**
     * Returns where the next attempt goes.
     *
     * @param tried ids of the nodes this request was sent to already, in order; empty on the first attempt
     */
    public Route select(TableSnapshot snapshot, RequestFacts facts, List<String> tried, EjectionView health) {
        List<Node> candidates = snapshot.candidates(facts.model());
        if (candidates.isEmpty()) {
            return snapshot.routable().isEmpty() ? Route.Refused.NO_UPSTREAM : Route.Refused.MODEL_NOT_FOUND;
        }
        if (facts.node() != null) {
            candidates = only(candidates, facts.node());
        }
        if (ramp.any()) {
            List<Node> ramped = ramped(candidates);
            if (ramped != candidates) {
                Route r = among(ramped, snapshot, facts, tried, health);
                if (r instanceof Route.To) {
                    return r;
                }
                // The nodes drawn in are full or tried: the ramping ones drawn out are better than a wait.
            }
        }
        return among(candidates, snapshot, facts, tried, health);
    }

    /**
     * Returns the slots on the nodes that serve {@code facts}' model and are not ejected (all of them
     * when every one is, as routing then panics): each node's room for this scheduler's requests, and
     * that less those in flight, summed; {@link FreeSlots#UNBOUNDED} when one has no known capacity.
     */
    public static FreeSlots freeSlots(TableSnapshot snapshot, RequestFacts facts, EjectionView health) {
        List<Node> candidates = snapshot.candidates(facts.model());
        boolean anyHealthy = false;
        if (health.anyEjected()) {
            for (Node n : candidates) {
                anyHealthy |= !health.isEjected(n.id());
            }
        }
        int free = 0;
        int total = 0;
        for (Node n : candidates) {
            if (anyHealthy && health.isEjected(n.id())) {
                continue;
            }
            if (n.capacity() == 0) {
                return FreeSlots.UNBOUNDED;
            }
            int limit = n.limit();
            total += limit;
            free += Math.max(0, limit - n.inFlight().get());
        }
        return new FreeSlots(free, total);
    }

    private Route among(List<Node> candidates, TableSnapshot snapshot, RequestFacts facts, List<String> tried,
                        EjectionView health) {
        boolean anyEjected = health.anyEjected();
        if (tried.isEmpty() && !anyEjected) {
            return claim(candidates, facts, snapshot, false);
        }
        List<Node> fresh = untried(candidates, tried);
        if (fresh.isEmpty()) {
            return Route.Refused.UNREACHABLE;
        }
        if (!anyEjected) {
            return claim(fresh, facts, snapshot, false);
        }
        List<Node> healthy = new ArrayList<>(fresh.size());
        for (Node n : fresh) {
            if (!health.isEjected(n.id())) {
                healthy.add(n);
            }
        }
        boolean panic = healthy.isEmpty();
        return claim(panic ? fresh : healthy, facts, snapshot, panic);
    }

    /**
     * Picks among {@code nodes} and, when the node picked has a known capacity, claims one of its
     * slots atomically. A node of unknown capacity always has room, as before capacity was reported,
     * so a fleet without it pays one field read. When the pick is full (or another event loop took
     * its last slot first), the pick is made again among the nodes that still have room; when none
     * has, {@link Route.Refused#FULL}: the request is to wait in the gateway queue.
     */
    private Route claim(List<Node> nodes, RequestFacts facts, TableSnapshot snapshot, boolean panic) {
        AffinityPick none = null;
        if (affinity != null) {
            if (facts.affinity() != null) {
                return claimByKey(nodes, facts, snapshot, panic);
            }
            none = AffinityPick.NONE;
        }
        Node n = pick(nodes, facts, snapshot);
        Lease lease = Lease.take(n);
        if (lease != null) {
            return sent(lease, facts.promptBytes(), facts, panic, none);
        }
        List<Node> roomy = withRoom(nodes, n);
        while (!roomy.isEmpty()) {
            n = pick(roomy, facts, snapshot);
            lease = Lease.take(n);
            if (lease != null) {
                return sent(lease, facts.promptBytes(), facts, panic, none);
            }
            roomy = withRoom(roomy, n);
        }
        return Route.Refused.FULL;
    }

    /**
     * The affinity strategy for a request with a key: the first node on its ring under the load bound
     * with room, claimed as {@link #claim} does; a lost race for a slot walks again, the node taken
     * being full by then. When warm first narrowed the candidates to nodes that are all full, the
     * ring is walked again over the candidates with room (those with memory free for the model
     * first, as warm first prefers): a node that has to load the model beats a wait in the queue
     * while it sits idle.
     */
    private Route claimByKey(List<Node> nodes, RequestFacts facts, TableSnapshot snapshot, boolean panic) {
        List<Node> base = snapshot.candidates(facts.model());
        HashRing ring = pickers.ring(snapshot, facts.model(), base, affinity);
        List<Node> allowed = narrow(nodes, facts, snapshot);
        Route r = walk(base, allowed, facts, panic, ring);
        if (r != Route.Refused.FULL || allowed == nodes) {
            return r;
        }
        List<Node> roomy = withRoom(nodes, null);
        // Among the cold nodes with room, warm first still prefers those with memory free for the model.
        return roomy.isEmpty() ? r : walk(base, warmFirst.prefer(roomy, facts.model()), facts, panic, ring);
    }

    private Route walk(List<Node> base, List<Node> allowed, RequestFacts facts, boolean panic, HashRing ring) {
        for (int race = 0; race < 4; race++) {
            AffinityBalancer.Choice choice = affinity.pick(ring, base, allowed, facts.affinity(), facts.promptBytes(),
                    facts.model());
            if (choice == null) {
                break;
            }
            Node n = choice.node();
            AffinityPick how = choice.hit() ? AffinityPick.HIT
                    : AffinityPick.spill(choice.passedOver() ? choice.owner().id() : null);
            Lease lease = Lease.take(n);
            if (lease != null) {
                affinity.settle(facts.affinity(), facts.model(), n, facts.promptBytes());
                return sent(lease, choice.uncached() >= 0 ? choice.uncached() : facts.promptBytes(), facts, panic, how);
            }
            if (!anyRoom(allowed)) {
                break;
            }
        }
        return Route.Refused.FULL;
    }

    /**
     * Returns the route of {@code lease}, whose request brings {@code uncachedBytes} of body the node
     * is not expected to hold in its prefix cache: those, in the node's tokens, join its prefill
     * backlog when the strategy reads it.
     */
    private Route.To sent(Lease lease, long uncachedBytes, RequestFacts facts, boolean panic, AffinityPick how) {
        if (tokenLoad) {
            lease.prefill(lease.node().inFlight().tokens().tokens(uncachedBytes), facts.model());
        }
        return new Route.To(lease, panic, false, how);
    }

    /** Returns the nodes of {@code nodes} with a free slot, less {@code except}. */
    private static List<Node> withRoom(List<Node> nodes, Node except) {
        List<Node> roomy = new ArrayList<>(nodes.size());
        for (Node n : nodes) {
            if (n != except && n.hasRoom()) {
                roomy.add(n);
            }
        }
        return roomy;
    }

    private static boolean anyRoom(List<Node> nodes) {
        for (Node n : nodes) {
            if (n.hasRoom()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Picks among {@code candidates} as warm first narrows them. The model's whole list of the
     * snapshot goes to the snapshot's picker for it, made once; a list made for this request (the
     * nodes not tried, not ejected, with room, warm) goes to the balancer's pick, which keeps no
     * state for it. When every node serving the model holds it by its heartbeat, nothing can narrow
     * and nothing is scanned.
     */
    private Node pick(List<Node> candidates, RequestFacts facts, TableSnapshot snapshot) {
        List<Node> list = narrow(candidates, facts, snapshot);
        String model = facts.model();
        return list == snapshot.candidates(model) ? pickers.pickWhole(snapshot, model, list)
                : pickers.pickAmong(snapshot, model, list);
    }

    /** Returns {@code candidates} as warm first narrows them (the same list when it does not). */
    private List<Node> narrow(List<Node> candidates, RequestFacts facts, TableSnapshot snapshot) {
        String model = facts.model();
        if (!warmFirst.enabled() || model == null || snapshot.heldEverywhere(model)) {
            return candidates;
        }
        List<Node> previous = pickers.narrowed(snapshot, model);
        List<Node> kept = warmFirst.prefer(candidates, model, previous);
        if (kept != candidates && kept != previous) {
            pickers.narrowedTo(snapshot, model, kept);
        }
        return kept;
    }

    /**
     * Returns whether any routable node serving the request's model is not in {@code tried}, ejected
     * or not (panic mode would try an ejected one); picks nothing.
     */
    public static boolean untriedLeft(TableSnapshot snapshot, RequestFacts facts, List<String> tried) {
        List<Node> candidates = snapshot.candidates(facts.model());
        for (Node n : facts.node() == null ? candidates : only(candidates, facts.node())) {
            if (!tried.contains(n.id())) {
                return true;
            }
        }
        return false;
    }

    /** Returns the candidates less the ramping ones drawn out this time; all of them when none is left. */
    private List<Node> ramped(List<Node> candidates) {
        List<Node> kept = null;
        for (int i = 0; i < candidates.size(); i++) {
            Node n = candidates.get(i);
            double share = ramp.share(n.id());
            boolean keep = share >= 1.0 || random.getAsDouble() < share;
            if (!keep && kept == null) {
                kept = new ArrayList<>(candidates.subList(0, i));
            } else if (keep && kept != null) {
                kept.add(n);
            }
        }
        return kept == null || kept.isEmpty() ? candidates : kept;
    }

    /**
     * Returns the one candidate with id {@code nodeId} (the request must go there: the node holds what
     * it continues, and it waits for that node's slot), or all of them when it is no candidate, since
     * the node is then gone and answers nothing; whichever node gets the request says what is missing.
     */
    private static List<Node> only(List<Node> candidates, String nodeId) {
        for (Node n : candidates) {
            if (n.id().equals(nodeId)) {
                return List.of(n);
            }
        }
        return candidates;
    }

    private static List<Node> untried(List<Node> candidates, List<String> tried) {
        if (tried.isEmpty()) {
            return candidates;
        }
        List<Node> fresh = new ArrayList<>(candidates.size());
        for (Node n : candidates) {
            if (!tried.contains(n.id())) {
                fresh.add(n);
            }
        }
        return fresh;
    }
}
