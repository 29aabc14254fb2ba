package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.proxy.policy.ErrorType;
import io.heartgate.scheduler.proxy.policy.Route;
import io.heartgate.scheduler.proxy.policy.RouteSelector;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.TableSnapshot;
import java.util.List;
import java.util.function.Supplier;

/**
 * Chooses the node of a request's first attempt ({@link RouteSelector} over the table's current
 * snapshot and the passive-health view), or answers {@code no_upstream} or {@code model_not_found}.
 * The relay asks the same selector again for each retry.
 */
final class Routing implements Stage {

    private final Supplier<TableSnapshot> table;
    private final RouteSelector selector;
    private final EjectionView health;

    Routing(Supplier<TableSnapshot> table, RouteSelector selector, EjectionView health) {
        this.table = table;
        this.selector = selector;
        this.health = health;
    }

    @Override
    public void handle(Call call) {
        if (call.route() != null) {
            call.proceed(); // pinned by an earlier stage (a management call for one node)
            return;
        }
        Route route = selector.select(table.get(), call.facts(), List.of(), health);
        if (route instanceof Route.To to) {
            call.route(to);
            call.proceed();
            return;
        }
        ErrorType error = ((Route.Refused) route).error();
        call.answer(Answer.error(error, error == ErrorType.NO_UPSTREAM ? "no routable inference node"
                : "no routable node serves model '" + call.facts().displayModel() + "'"));
    }
}
