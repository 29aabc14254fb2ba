package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.proxy.policy.RouteSelector;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.proxy.policy.RequestFacts;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/** Builds the proxy's list of stages. */
public final class Stages {

    private Stages() {
    }

    /**
     * Returns today's stages, in order: the node's request headers, then the first route. Stages
     * that need the final headers (authentication removes the caller's key) go before
     * {@code ForwardedHeaders}; stages that shape the route (admission, affinity) go before
     * {@code Routing}, which is always last.
     */
    /** Returns every body fact some of {@code stages} reads, besides the model. */
    public static Set<RequestFacts.Field> fieldsRead(List<Stage> stages) {
        EnumSet<RequestFacts.Field> fields = EnumSet.noneOf(RequestFacts.Field.class);
        stages.forEach(s -> fields.addAll(s.reads()));
        return fields;
    }

    public static List<Stage> standard(Supplier<TableSnapshot> table, RouteSelector selector, EjectionView health) {
        return List.of(new ForwardedHeaders(), new Routing(table, selector, health));
    }
}
