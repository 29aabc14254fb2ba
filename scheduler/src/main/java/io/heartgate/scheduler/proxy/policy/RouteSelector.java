package io.heartgate.scheduler.proxy.policy;

import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.util.ArrayList;
import java.util.List;

/**
 * Chooses the node for one attempt of a request from a table snapshot: the routable nodes that
 * serve the request's model, less the nodes this request already tried, less the nodes passive
 * health ejected; the balancer picks among what is left.
 *
 * <p><b>Panic mode</b>: when every remaining candidate is ejected, ejection is more likely wrong
 * than every node dead, so they are all tried anyway rather than failing every request until the
 * back-off ends. Refusals: {@code no_upstream} when no node is routable at all, {@code
 * model_not_found} when none serves the model, {@code upstream_unreachable} when every candidate
 * was tried. Pure apart from the balancer's own rotation state; allocates nothing in the common case
 * of a first attempt with no node ejected.
 */
public final class RouteSelector {

    private final Balancer balancer;

    /** Creates a selector picking with {@code balancer}. */
    public RouteSelector(Balancer balancer) {
        this.balancer = balancer;
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
        boolean anyEjected = health.anyEjected();
        if (tried.isEmpty() && !anyEjected) {
            return new Route.To(balancer.pick(candidates).orElseThrow(), false);
        }
        List<Node> fresh = untried(candidates, tried);
        if (fresh.isEmpty()) {
            return Route.Refused.UNREACHABLE;
        }
        if (!anyEjected) {
            return new Route.To(balancer.pick(fresh).orElseThrow(), false);
        }
        List<Node> healthy = new ArrayList<>(fresh.size());
        for (Node n : fresh) {
            if (!health.isEjected(n.id())) {
                healthy.add(n);
            }
        }
        boolean panic = healthy.isEmpty();
        return new Route.To(balancer.pick(panic ? fresh : healthy).orElseThrow(), panic);
    }

    /**
     * Returns whether any routable node serving the request's model is not in {@code tried}, ejected
     * or not (panic mode would try an ejected one); picks nothing.
     */
    public static boolean untriedLeft(TableSnapshot snapshot, RequestFacts facts, List<String> tried) {
        for (Node n : snapshot.candidates(facts.model())) {
            if (!tried.contains(n.id())) {
                return true;
            }
        }
        return false;
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
