package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.policy.Headers;
import io.heartgate.scheduler.proxy.stage.Answer;
import io.heartgate.scheduler.proxy.stage.Call;
import io.heartgate.scheduler.proxy.stage.Stage;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import java.util.List;
import java.util.Map;

/**
 * One request going through the stages of its {@link ClientConnection}: runs them in order, and
 * hands the request to the relay after the last, or the answer of the stage that gave one back to
 * the connection. Once it has passed the request on it is frozen (a late stage's setter does
 * nothing) and is what the exchange reads as the request's {@link Admitted} value. Event-loop confined.
 */
final class StagedCall implements Call, Admitted {

    private final ClientConnection conn;
    private final List<Stage> stages;
    private final FullHttpRequest request;
    private final Endpoint endpoint;
    private final NettyHeaders headers;
    private final boolean keepAlive;
    private final long startNanos;
    private RequestFacts facts;
    /** The node a stage pinned the request to, or {@code null}. */
    private Route.To route;
    private int next;
    private boolean ended;
    private Map<String, String> responseHeaders = Map.of();
    private boolean usageUnasked;

    StagedCall(ClientConnection conn, List<Stage> stages, FullHttpRequest request, Endpoint endpoint, RequestFacts facts,
               long startNanos) {
        this.endpoint = endpoint;
        this.conn = conn;
        this.stages = stages;
        this.request = request;
        this.headers = new NettyHeaders(request.headers());
        this.keepAlive = HttpUtil.isKeepAlive(request); // before a stage removes the Connection header
        this.facts = facts;
        this.startNanos = startNanos;
    }

    @Override
    public String method() {
        return request.method().name();
    }

    @Override
    public String uri() {
        return request.uri();
    }

    @Override
    public Endpoint endpoint() {
        return endpoint;
    }

    @Override
    public String clientIp() {
        return conn.remoteIp();
    }

    @Override
    public Headers headers() {
        return headers;
    }

    @Override
    public RequestFacts facts() {
        return facts;
    }

    @Override
    public void facts(RequestFacts updated) {
        if (!ended) {
            facts = updated;
        }
    }

    @Override
    public void route(Route.To first) {
        if (!ended) {
            route = first;
        }
    }

    @Override
    public FullHttpRequest request() {
        return request;
    }

    @Override
    public Route.To pinned() {
        return route;
    }

    @Override
    public boolean keepAlive() {
        return keepAlive;
    }

    @Override
    public long startNanos() {
        return startNanos;
    }

    @Override
    public Map<String, String> responseHeaders() {
        return responseHeaders;
    }

    @Override
    public boolean usageChunkHidden() {
        return usageUnasked;
    }

    @Override
    public Route.To route() {
        return route;
    }

    @Override
    public void proceed() {
        if (ended) {
            return;
        }
        if (next < stages.size()) {
            stages.get(next++).handle(this);
            return;
        }
        ended = true;
        conn.relay(this); // frozen from here on: the exchange reads it as its Admitted
    }

    @Override
    public void answer(Answer answer) {
        if (ended) {
            return;
        }
        ended = true;
        conn.answered(request, answer.withHeaders(responseHeaders), keepAlive, facts.caller());
    }

    @Override
    public boolean ended() {
        return ended;
    }

    @Override
    public boolean namesModelTwice() {
        return TopLevelFields.namesModelTwice(request.content(), request.uri());
    }

    @Override
    public byte[] body() {
        ByteBuf content = request.content();
        byte[] bytes = new byte[content.readableBytes()];
        content.getBytes(content.readerIndex(), bytes);
        return bytes;
    }

    @Override
    public boolean body(byte[] replacement) {
        if (ended) {
            return false;
        }
        ByteBuf content = request.content();
        if (replacement.length > content.maxCapacity()) {
            return false; // a buffer that cannot grow: the body goes as it came
        }
        content.clear().writeBytes(replacement);
        HttpUtil.setContentLength(request, replacement.length);
        return true;
    }

    @Override
    public void responseHeaders(Map<String, String> headers) {
        if (!ended) {
            responseHeaders = headers;
        }
    }

    @Override
    public void usageUnasked() {
        if (!ended) {
            usageUnasked = true;
        }
    }

    /** The client went away while a stage still held the request. */
    void cancel() {
        if (!ended) {
            ended = true;
            request.release();
        }
    }
}
