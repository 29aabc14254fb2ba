package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.usage.UsageReader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;

/**
 * A connection's usage accounting, for the answer it relays now: which answers are counted (every
 * success answer to a POST, whether or not the body named a model: vLLM, TGI and llama.cpp serve
 * one without), how their tail is kept ({@link BodyTail}), and what is counted and charged when the
 * answer ends or is cut; and the copy of a stream kept so that it can move to another node
 * ({@link Transcript}). Keeps that job out of the exchange's state machine; one per connection,
 * reused by its answers (a connection relays one at a time), so it costs the request path no
 * allocation. Event-loop confined.
 */
final class AnswerUsage {

    /** The most bytes of a stream's first chunk read for its opening event's usage. */
    private static final int OPENING_BYTES = 4096;

    private final BodyTail tail = new BodyTail();
    private final Transcript transcript = new Transcript();
    private final UnaskedUsageChunk unasked = new UnaskedUsageChunk();
    /** Whether the answer is an SSE stream (an OpenAI one reports usage only when asked). */
    private boolean sse;
    /** Whether the proxy, not the client, asked for the usage chunk of the request relayed now. */
    private boolean usageUnasked;
    /** Whether the answer's first chunk is to be read for its input tokens (an Anthropic stream's {@code message_start}). */
    private boolean readOpening;
    /** The input tokens the answer's first event reported, or -1. */
    private long openingInput = -1;

    /** Returns the connection's copy of the stream it relays now. */
    Transcript transcript() {
        return transcript;
    }

    /** A request is to be relayed; {@code usageUnasked}: the proxy alone asked for its stream's usage chunk. */
    void relaying(boolean usageUnasked) {
        this.usageUnasked = usageUnasked;
    }

    /**
     * The node's response head to {@code req}, of status {@code code}: starts keeping its body's tail
     * if it is counted; where the proxy, not the client, asked for a stream's usage chunk
     * ({@link #relaying}), a stream's usage-only event is kept from the client. Not from a stream whose
     * head gives its length, which the client would then wait on forever, nor from a compressed
     * one, whose bytes are not lines.
     */
    void head(FullHttpRequest req, int code, HttpResponse response) {
        // A whole JSON answer's usage more fields may follow; a stream's is its last event.
        String type = response.headers().get(HttpHeaderNames.CONTENT_TYPE);
        tail.start(code < 300 && req.method() == HttpMethod.POST, is(type, "application/json"));
        sse = is(type, "text/event-stream");
        readOpening = sse && code < 300 && Endpoint.of(req.uri()) == Endpoint.ANTHROPIC_MESSAGES;
        openingInput = -1;
        unasked.start(usageUnasked && sse && code < 300 && !response.headers().contains(HttpHeaderNames.CONTENT_LENGTH)
                && !response.headers().contains(HttpHeaderNames.CONTENT_ENCODING));
    }

    /** Returns a chunk of the answer's body as its client gets it ({@link UnaskedUsageChunk#shown}). */
    HttpContent shown(HttpContent content, boolean last) {
        return unasked.shown(content, last);
    }

    /** Notes a chunk of the answer's body (indexes untouched). */
    void add(ByteBuf chunk) {
        tail.add(chunk);
        if (readOpening && chunk.isReadable()) {
            readOpening = false;
            byte[] head = ByteBufUtil.getBytes(chunk, chunk.readerIndex(), Math.min(chunk.readableBytes(), OPENING_BYTES));
            UsageReader.Usage opening = UsageReader.read(head, head.length);
            openingInput = opening == null ? -1 : opening.prompt();
        }
    }

    /**
     * The answer ended: counts and charges what its node reported, and returns it ({@code null}: nothing).
     */
    UsageReader.Usage ended(Recorder recorder, String caller, String modelLabel) {
        UsageReader.Usage used = reported();
        recorder.used(caller, modelLabel, used);
        return used;
    }

    /** Returns what the node reported: the last usage, with a stream's input tokens from its first event when the last lacks them. */
    private UsageReader.Usage reported() {
        UsageReader.Usage used = tail.usage();
        return used != null && used.prompt() == 0 && openingInput > 0
                ? new UsageReader.Usage(openingInput, used.completion()) : used;
    }

    /**
     * The answer to {@code req} was cut (the client hung up, the node's connection broke): what the
     * node reported before counts, so a client cannot escape {@code tpm=} by hanging up before the
     * end; when it reported nothing yet, an estimate is charged to {@code tpm=} alone.
     */
    void cut(Recorder recorder, FullHttpRequest req, String caller, String modelLabel) {
        UsageReader.Usage used = reported();
        recorder.used(caller, modelLabel, used);
        if (used == null && tail.counting() && caller != null) {
            recorder.chargeCut(caller, req, tail.eventsEstimate(), sse);
        }
    }

    /**
     * The client of {@code req} (a POST, sent to its node, whose answer had not begun) hung up: the
     * node read the prompt, so a limited key is charged its estimate ({@link KeyLimits#chargeGoneBeforeHead}).
     */
    void goneBeforeHead(Recorder recorder, FullHttpRequest req, String caller, boolean streams) {
        if (caller != null && req.method() == HttpMethod.POST) {
            recorder.chargeGoneBeforeHead(caller, req, streams);
        }
    }

    /** Says whether the content type {@code t} (or {@code null}) is {@code type}, parameters aside. */
    private static boolean is(String t, String type) {
        return t != null && t.regionMatches(true, 0, type, 0, type.length());
    }
}
