package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.proxy.policy.Headers;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import java.util.Map;

/**
 * One request on its way through the {@link Stage}s to the relay, as a stage sees it: what it asks
 * for, its headers (changes reach the node), and the two ways on: {@link #proceed()} or
 * {@link #answer(Answer)}. Confined to the request's event loop.
 */
public interface Call {

    /** Returns the request's method, such as {@code POST}. */
    String method();

    /** Returns the request target as the client sent it: path and query. */
    String uri();

    /** Returns the endpoint of {@link #uri()}: read once per request where the call keeps it. */
    default Endpoint endpoint() {
        return Endpoint.of(uri());
    }

    /** Returns the client's address. */
    String clientIp();

    /** Returns the request's headers; what a stage sets or removes here is what the node receives. */
    Headers headers();

    /** Returns what is known of the request so far. */
    RequestFacts facts();

    /** Replaces what is known of the request, for the stages after this one and the relay. */
    void facts(RequestFacts updated);

    /**
     * Pins the request to the node of {@code first} and to no other (a model-management call); a
     * request no stage pins is routed after the last stage, by the dispatcher.
     */
    void route(Route.To first);

    /** Returns the node a stage pinned the request to, or {@code null}. */
    Route.To route();

    /** Passes the request on to the next stage, or to the relay after the last. */
    void proceed();

    /** Answers the request; no later stage and no node sees it. */
    void answer(Answer answer);

    /** Returns whether the client is gone or the call was answered; a late stage then does nothing. */
    boolean ended();

    /**
     * Returns whether the body names its model in more than one top-level field (servers disagree
     * on which counts). Reads the whole top level, which {@link #facts()} never does: for the few
     * requests that need it.
     */
    boolean namesModelTwice();

    /** Returns a copy of the request's body bytes (for the rare stage that rewrites it). */
    byte[] body();

    /** Replaces the request's body (and its {@code Content-Length}); returns whether it could. */
    boolean body(byte[] replacement);

    /** Sets headers every answer to the request carries, the node's or the proxy's own (rate-limit figures). */
    void responseHeaders(Map<String, String> headers);

    /**
     * Says that a stage made the request ask its node for a stream's usage chunk that the client
     * did not ask for: the tokens in it are counted, and the chunk is not relayed to the client.
     */
    void usageUnasked();
}
