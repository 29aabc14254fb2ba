package io.heartgate.sim;

import io.vertx.ext.web.RoutingContext;
import java.util.Optional;

/** Answers, in one wire format's shapes, the refusals that every model endpoint of that format shares. */
interface Dialect {

    /** Answers {@code status} with the format's error object carrying {@code message}. */
    void error(RoutingContext ctx, int status, String message);

    /** Answers a request for a model that is not loaded, as the real server words it. */
    void modelNotFound(RoutingContext ctx, String model);

    /** Returns the model for a request that names none, or empty once it has answered with an error. */
    Optional<String> unnamedModel(RoutingContext ctx);

    /** Answers 503 because every slot and the whole queue of {@code maxQueue} are taken. */
    void busy(RoutingContext ctx, int maxQueue);

    /** Answers the error status that the errorStatus fault injects. */
    default void injectedError(RoutingContext ctx, int status) {
        error(ctx, status, "simulated error (fault injection)");
    }
}
