package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.util.function.Supplier;

/**
 * Keeps Ollama's model-management calls ({@code /api/pull}, {@code /api/delete}, {@code /api/create},
 * {@code /api/copy}, {@code /api/push}) from landing on whichever node the strategy picks: each
 * changes one node's disk, so by default they are refused with 405 {@code management_disabled}
 * (run them on the node); with {@code --allow-model-management} one goes to exactly the node its
 * {@code X-Heartgate-Node} header names, pinned there (never retried on another), and 400 without it.
 */
final class ModelManagement implements Stage {

    /** The header that names the node a management call is for; never forwarded. */
    static final String NODE_HEADER = "x-heartgate-node";

    private final Supplier<TableSnapshot> table;
    private final boolean allowed;

    ModelManagement(Supplier<TableSnapshot> table, boolean allowed) {
        this.table = table;
        this.allowed = allowed;
    }

    @Override
    public void handle(Call call) {
        if (call.endpoint().role() != Endpoint.Role.MANAGEMENT) {
            call.proceed();
            return;
        }
        String path = call.endpoint().path();
        if (!allowed) {
            call.answer(Answer.error(ErrorType.MANAGEMENT_DISABLED, path + " changes a node's models: run it on the "
                    + "node itself (the scheduler forwards model management only with --allow-model-management)"));
            return;
        }
        String id = call.headers().get(NODE_HEADER);
        call.headers().remove(NODE_HEADER);
        if (id == null || id.isBlank()) {
            call.answer(Answer.error(ErrorType.BAD_REQUEST, 400, path + " changes one node's models: name it in the "
                    + "X-Heartgate-Node header"));
            return;
        }
        Node node = table.get().node(id.trim());
        if (node == null) {
            call.answer(Answer.error(ErrorType.NODE_NOT_FOUND, "no node '" + id.trim() + "' is listed"));
            return;
        }
        call.route(Route.To.pinned(node));
        call.proceed();
    }
}
