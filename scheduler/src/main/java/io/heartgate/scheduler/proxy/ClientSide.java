package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.policy.HeaderPolicy;
import io.heartgate.scheduler.proxy.stage.Answer;
import java.util.Map;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;

/**
 * The client's half of one exchange: writes the response head the header policy shaped and the
 * body chunk by chunk, with one flush per read from the node, and knows whether the client's
 * connection stays open afterwards. Event-loop confined.
 */
final class ClientSide {

    private final ClientConnection conn;
    private final ProxyCounters counters;
    private final Channel channel;
    private final boolean http10;
    private final boolean headRequest;
    private boolean keep;
    private boolean streaming;
    private boolean unflushed;
    private int status;
    /** Headers every answer to this request carries (a limited key's rate-limit figures); usually none. */
    private Map<String, String> extra;

    /** Replaces the headers every answer to this request carries from now on (a key's rate-limit figures changed). */
    void extraHeaders(Map<String, String> headers) {
        extra = headers;
    }

    /** {@code keepAlive}: whether the client's request asked to keep the connection open. */
    ClientSide(ClientConnection conn, FullHttpRequest req, boolean keepAlive, ProxyCounters counters,
               Map<String, String> extra) {
        this.extra = extra;
        this.conn = conn;
        this.counters = counters;
        this.channel = conn.channel();
        this.http10 = req.protocolVersion() == HttpVersion.HTTP_1_0;
        this.headRequest = req.method() == HttpMethod.HEAD;
        this.keep = keepAlive;
    }

    /** Writes the node's response head as the client gets it. */
    void head(HttpResponse response, String nodeId) {
        status = response.status().code();
        response.setProtocolVersion(HttpVersion.HTTP_1_1);
        if (!extra.isEmpty()) {
            extra.forEach(response.headers()::set);
        }
        HeaderPolicy.ResponsePlan plan = HeaderPolicy.towardClient(new NettyHeaders(response.headers()), status,
                headRequest, http10, keep && !conn.draining(), nodeId);
        keep = plan.keepClient();
        streaming = plan.streaming();
        if (streaming) {
            counters.streamStarted();
        }
        channel.write(response, channel.voidPromise()); // a failed write reaches ClientConnection.exceptionCaught
        unflushed = true;
    }

    /** Writes a chunk; returns {@code false} when the client's buffer is full and the node should pause. */
    boolean chunk(HttpContent content) {
        channel.write(content, channel.voidPromise());
        unflushed = true;
        return channel.isWritable();
    }

    /** Writes the last chunk and flushes; returns the write. */
    ChannelFuture last(HttpContent content) {
        unflushed = false;
        return channel.writeAndFlush(content);
    }

    /** Flushes what the last read from the node gave, if anything. */
    void readComplete() {
        if (unflushed) {
            unflushed = false;
            channel.flush();
        }
    }

    /** Sends the proxy's own answer unless the client is gone; returns the write, or {@code null}. */
    ChannelFuture answer(Answer answer) {
        return ProxyErrors.send(channel, answer.withHeaders(extra), closesAfter());
    }

    /** Closes the client's connection: it sees a truncated response, never a clean end. */
    void cut() {
        channel.close();
    }

    /** Returns whether the connection closes after this response. */
    boolean closesAfter() {
        return !keep || conn.draining();
    }

    /** Returns the status relayed, or 0 before a head. */
    int status() {
        return status;
    }

    /** The exchange ended: a stream in progress is one fewer. */
    void ended() {
        if (streaming) {
            streaming = false;
            counters.streamEnded();
        }
    }
}
