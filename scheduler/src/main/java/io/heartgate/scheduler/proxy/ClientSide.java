package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.migration.Form;
import io.heartgate.scheduler.proxy.policy.HeaderPolicy;
import io.heartgate.scheduler.proxy.stage.Answer;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.routing.AffinityPick;
import io.heartgate.scheduler.routing.ResponseHomes;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.tracing.RequestTrace;
import io.heartgate.scheduler.usage.UsageAccounting;
import io.heartgate.scheduler.usage.UsageReader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.Map;

/**
 * The client's half of one exchange: writes the response head the header policy shaped and the
 * body chunk by chunk, with one flush per read from the node, or the proxy's own answer; shows the
 * connection's usage accounting ({@link AnswerUsage}) every byte the client gets, and knows whether
 * the client's connection stays open afterwards. Event-loop confined.
 */
final class ClientSide {

    private final ClientConnection conn;
    private final FullHttpRequest req;
    private final AnswerUsage usage;
    private final Transcript transcript;
    private final Recorder recorder;
    private final Timeouts clock;
    private final String caller;
    private final String model;
    private final long startNanos;
    private final Channel channel;
    private boolean keep;
    private boolean streaming;
    private boolean unflushed;
    private int status;
    /** Headers every answer to this request carries (a limited key's rate-limit figures); usually none. */
    private Map<String, String> extra;
    private final NodeEvidence evidence;
    private final RequestTrace trace;
    private final boolean responsesApi;
    /** The node whose answer to a Responses API request is relayed, until its response id is read; else {@code null}. */
    private String responseOf;

    /**
     * @param clock the loop's clocks: latencies end on its monotonic one
     * @param evidence told which node made a Responses API answer
     */
    ClientSide(ClientConnection conn, Admitted call, Recorder recorder, Timeouts clock, NodeEvidence evidence,
               RequestTrace trace) {
        this.conn = conn;
        this.trace = trace;
        this.evidence = evidence;
        this.responsesApi = call.endpoint() == Endpoint.OPENAI_RESPONSES;
        this.clock = clock;
        this.caller = call.facts().caller();
        this.model = call.facts().model();
        this.startNanos = call.startNanos();
        this.req = call.request();
        this.usage = conn.usage();
        this.transcript = usage.transcript();
        this.recorder = recorder;
        this.extra = call.responseHeaders();
        this.channel = conn.channel();
        this.keep = call.keepAlive();
    }

    /**
     * Writes the node's response head as the client gets it: marked with how the affinity strategy
     * placed the request ({@code affinity}, or {@code null} under another strategy), and seen by the
     * usage accounting first; {@code movable}: the form of a stream that is kept, so that it can move
     * to another node if its node fails ({@link Transcript}), or {@code null}.
     */
    void head(HttpResponse response, String nodeId, AffinityPick affinity, Form movable) {
        status = response.status().code();
        usage.head(req, status, response);
        responseOf = responsesApi && status < 300 ? nodeId : null;
        if (affinity != null) {
            response.headers().set("X-Heartgate-Affinity", affinity.result());
            recorder.affinity(affinity);
        }
        response.setProtocolVersion(HttpVersion.HTTP_1_1);
        if (!extra.isEmpty()) {
            extra.forEach(response.headers()::set);
        }
        HeaderPolicy.ResponsePlan plan = HeaderPolicy.towardClient(new NettyHeaders(response.headers()), status,
                req.method() == HttpMethod.HEAD, req.protocolVersion() == HttpVersion.HTTP_1_0, keep && !conn.draining(),
                nodeId);
        keep = plan.keepClient();
        streaming = plan.streaming();
        transcript.begin(movable != null && streaming && status < 300, movable != null && !movable.sse());
        if (streaming) {
            recorder.counters().streamStarted();
        }
        channel.write(response, channel.voidPromise()); // a failed write reaches ClientConnection.exceptionCaught
        unflushed = true;
    }

    /** Writes a chunk that is not the last; returns {@code false} when the client's buffer is full and the node should pause. */
    boolean chunk(HttpContent content) {
        trace.firstChunk();
        if (responseOf != null) {
            responseId(content.content());
        }
        content = transcript.whole(content);
        if (content == null) {
            return channel.isWritable();
        }
        usage.add(content.content());
        HttpContent shown = usage.shown(content, false);
        if (shown != null) {
            channel.write(shown, channel.voidPromise());
            unflushed = true;
        }
        return channel.isWritable();
    }

    /**
     * Writes the last chunk and flushes, then counts and charges the tokens {@code node} reported;
     * returns the write. {@code moved}: the answer moved to {@code node} from another, so what it
     * reported is no measure of this request's body.
     */
    ChannelFuture last(HttpContent content, Node node, boolean moved) {
        trace.firstChunk();
        if (responseOf != null) {
            responseId(content.content());
        }
        if (content instanceof LastHttpContent l) {
            content = transcript.last(l);
        }
        transcript.end();
        usage.add(content.content());
        HttpContent shown = usage.shown(content, true);
        unflushed = false;
        ChannelFuture written = channel.writeAndFlush(shown);
        UsageReader.Usage used = usage.ended(recorder, caller, modelLabel(node));
        if (used != null) {
            trace.usage(used.prompt(), used.completion());
        }
        if (used != null && node != null && !moved && !responsesApi) { // a follow-up's prompt is not in its body
            evidence.reported(node, req.content().readableBytes(), used.prompt());
        }
        return written;
    }

    /** Reads the response id a Responses API answer begins with, once its first bytes came. */
    private void responseId(ByteBuf body) {
        if (body.isReadable()) {
            byte[] start = ByteBufUtil.getBytes(body, body.readerIndex(), Math.min(body.readableBytes(), 4096));
            String id = ResponseHomes.idIn(start, start.length);
            if (id != null) {
                evidence.responseMade(responseOf, id);
            }
            responseOf = null;
        }
    }

    /** Flushes what the last read from the node gave, if anything. */
    void readComplete() {
        if (unflushed) {
            unflushed = false;
            channel.flush();
        }
    }

    /** The answer of {@code node} was cut: what it reported counts, else an estimate ({@link AnswerUsage#cut}). */
    void cutShort(Node node) {
        trace.cut();
        usage.cut(recorder, req, caller, modelLabel(node));
    }

    /** The client left after its node had the request, before the answer began ({@link AnswerUsage#goneBeforeHead}). */
    void goneBeforeHead(boolean streams) {
        usage.goneBeforeHead(recorder, req, caller, streams);
    }

    /**
     * Counts and sends the proxy's own answer {@code error} (with {@code Retry-After} when
     * {@code retryAfterSeconds} is not negative) unless the client is gone; returns the write, or {@code null}.
     * {@code limitHeaders}, when not {@code null}, replace the key's rate-limit figures (its token came back).
     */
    ChannelFuture error(ErrorType error, String message, int retryAfterSeconds, Map<String, String> limitHeaders) {
        if (limitHeaders != null) {
            extra = limitHeaders;
        }
        recorder.error(error);
        Answer answer = Answer.error(error, message);
        if (retryAfterSeconds >= 0) {
            answer = answer.withHeader("Retry-After", Integer.toString(retryAfterSeconds));
        }
        return ProxyErrors.send(channel, answer.withHeaders(extra), closesAfter());
    }

    /** Returns the request's model as metrics label it on {@code node}, or {@code null} when no node answered. */
    private String modelLabel(Node node) {
        return node == null ? null : UsageAccounting.modelLabel(model, node);
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

    /**
     * The exchange ended with {@code status} (0 when abandoned): recorded per caller and, when
     * {@code node} answered, per node with its latency and time to first byte ({@code headNanos});
     * a stream in progress is one fewer.
     */
    void ended(int status, Node node, long headNanos) {
        String modelLabel = modelLabel(node);
        if (node != null) { // a response cut short (client gone) is recorded with status class "none"
            recorder.relayed(node.id(), status, modelLabel, clock.nanoTime() - startNanos, headNanos - startNanos);
        }
        recorder.ended(caller, modelLabel, status);
        trace.ended(status, node);
        if (streaming) {
            streaming = false;
            recorder.counters().streamEnded();
        }
    }
}
