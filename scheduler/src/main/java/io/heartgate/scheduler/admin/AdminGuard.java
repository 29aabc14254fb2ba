package io.heartgate.scheduler.admin;

import io.vertx.core.Handler;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Keeps the fleet's view to whoever holds the admin token ({@code --admin-token}): the routes it
 * guards answer only requests with {@code Authorization: Bearer TOKEN}, others get 401 with type
 * {@code invalid_admin_token}. The probes ({@code /healthz}, {@code /readyz}) and {@code /metrics}
 * stay open for load balancers and Prometheus unless {@code guardProbes}. The token is compared by
 * the SHA-256 of both sides with {@link MessageDigest#isEqual}: the time taken says nothing of how
 * much of it a guess got right, nor of its length. Thread-safe.
 */
public final class AdminGuard implements Handler<RoutingContext> {

    /** No token: every route open. */
    public static final AdminGuard OPEN = new AdminGuard(null, false);

    private static final String UNAUTHORIZED = new JsonObject().put("error", new JsonObject()
            .put("message", "this needs the admin token: send Authorization: Bearer TOKEN")
            .put("type", "invalid_admin_token")).encode();

    private final byte[] tokenDigest;
    private final boolean guardProbes;

    private AdminGuard(byte[] tokenDigest, boolean guardProbes) {
        this.tokenDigest = tokenDigest;
        this.guardProbes = guardProbes;
    }

    /** Returns a guard that asks for {@code token}; on the probes and metrics too when {@code guardProbes}. */
    public static AdminGuard of(String token, boolean guardProbes) {
        return new AdminGuard(sha256(token), guardProbes);
    }

    /** Returns whether a token is asked for at all. */
    public boolean enabled() {
        return tokenDigest != null;
    }

    /** Returns whether the probes and {@code /metrics} need the token too. */
    public boolean guardsProbes() {
        return guardProbes;
    }

    @Override
    public void handle(RoutingContext ctx) {
        if (tokenDigest == null || allowed(ctx.request().getHeader("authorization"))) {
            ctx.next();
            return;
        }
        ctx.response().setStatusCode(401)
                .putHeader("content-type", "application/json; charset=utf-8")
                .putHeader("www-authenticate", "Bearer realm=\"heartgate-admin\"")
                .end(UNAUTHORIZED);
    }

    private boolean allowed(String authorization) {
        if (authorization == null || authorization.length() <= 7
                || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return false;
        }
        return MessageDigest.isEqual(tokenDigest, sha256(authorization.substring(7).strip()));
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256", e);
        }
    }

    @Override
    public String toString() {
        return tokenDigest == null ? "AdminGuard[open]" : "AdminGuard[token" + (guardProbes ? ", probes too]" : "]");
    }
}
