package io.heartgate.sim;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds the faults in force and serves {@code /sim/faults}, where tests and demos read, patch and clear
 * them at run time. Safe from any thread: the whole {@link Faults} value is swapped through one
 * volatile field.
 */
final class FaultControl {

    // Logs under the server's name: operators and scripts read these lines as the node's own.
    private static final Logger log = LoggerFactory.getLogger(SimServer.class);

    private final String nodeName;
    private volatile Faults faults;

    FaultControl(String nodeName, Faults initial) {
        this.nodeName = nodeName;
        this.faults = initial;
    }

    /** Returns the faults in force now. */
    Faults current() {
        return faults;
    }

    /** Replaces the faults in force. */
    void set(Faults newFaults) {
        this.faults = newFaults;
    }

    /** Adds the {@code GET}, {@code POST} and {@code DELETE /sim/faults} routes to {@code router}. */
    void mount(Router router) {
        router.get("/sim/faults").handler(ctx -> Requests.json(ctx, 200, faults.toJson()));
        router.post("/sim/faults").handler(this::patch);
        router.delete("/sim/faults").handler(ctx -> {
            faults = Faults.NONE;
            log.info("Node {} cleared all faults", nodeName);
            Requests.json(ctx, 200, faults.toJson());
        });
    }

    private void patch(RoutingContext ctx) {
        JsonObject patch;
        try {
            patch = ctx.body().asJsonObject();
        } catch (DecodeException | ClassCastException e) {
            patch = null;
        }
        if (patch == null) {
            Requests.json(ctx, 400, new JsonObject().put("error", "body must be a JSON object"));
            return;
        }
        try {
            faults = faults.merge(patch);
        } catch (IllegalArgumentException e) {
            Requests.json(ctx, 400, new JsonObject().put("error", e.getMessage()));
            return;
        }
        log.info("Node {} faults now {}", nodeName, faults.toJson().encode());
        Requests.json(ctx, 200, faults.toJson());
    }
}
