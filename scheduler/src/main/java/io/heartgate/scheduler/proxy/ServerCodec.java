package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.policy.RequestFraming;
import io.heartgate.scheduler.time.Ticker;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.CombinedChannelDuplexHandler;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ByteProcessor;
import java.util.ArrayDeque;
import java.util.List;

/**
 * The proxy port's HTTP/1.1 codec: Netty's request decoder and response encoder, as in Netty's
 * {@code HttpServerCodec}, plus the framing rules of {@link RequestFraming}. A request that breaks
 * one leaves the decoder marked as failed, so {@link ClientConnection} answers 400 and closes, and an
 * absolute-form target is rewritten to origin form. Written here rather than used as Netty ships it
 * because {@code HttpServerCodec} keeps its decoder private, and that decoder accepts a request with
 * both {@code Transfer-Encoding} and {@code Content-Length} by dropping the latter, where a proxy
 * in front of other parsers must reject it. Like Netty's, the encoder knows which responses answer a
 * {@code HEAD} (no body) from the order of the requests.
 */
final class ServerCodec extends CombinedChannelDuplexHandler<HttpRequestDecoder, HttpResponseEncoder> {

    /** Where the request being read stands: what the header and body timeouts look at. */
    enum Receiving {
        /** Between requests: nothing of the next one read yet. */
        NOTHING,
        /** Bytes of a request head read, the head not complete. */
        HEAD,
        /** The head read, the body not complete. */
        BODY
    }

    private final ArrayDeque<HttpMethod> methods = new ArrayDeque<>();
    private final Ticker clock;
    private Receiving receiving = Receiving.NOTHING;
    private long receivingSinceMs;

    /** @param clock the event loop's coarse clock: when a head or a body began to arrive */
    ServerCodec(HttpDecoderConfig config, Ticker clock) {
        this.clock = clock;
        init(new Decoder(config), new Encoder());
    }

    /** Returns what of a request is being read now. */
    Receiving receiving() {
        return receiving;
    }

    /** Returns when the current {@link #receiving()} phase began, in ms of the coarse clock. */
    long receivingSinceMs() {
        return receivingSinceMs;
    }

    private void receiving(Receiving phase) {
        receiving = phase;
        receivingSinceMs = clock.millis();
    }

    private final class Decoder extends HttpRequestDecoder {

        /** Set at the first request that cannot be framed: nothing after it is a request to read. */
        private boolean rejecting;

        Decoder(HttpDecoderConfig config) {
            super(config);
        }

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf buffer, List<Object> out) throws Exception {
            if (rejecting) {
                buffer.skipBytes(buffer.readableBytes());
                return;
            }
            if (receiving == Receiving.NOTHING && buffer.forEachByte(ByteProcessor.FIND_NON_CRLF) >= 0) {
                receiving(Receiving.HEAD); // the CRLFs a client may send between requests are ignored, not a head
            }
            int before = out.size();
            super.decode(ctx, buffer, out);
            for (int i = before; i < out.size(); i++) {
                Object o = out.get(i);
                if (o instanceof HttpRequest request) {
                    methods.add(request.method());
                    checkFraming(request);
                    receiving(Receiving.BODY);
                }
                if (o instanceof LastHttpContent) {
                    receiving = Receiving.NOTHING;
                }
            }
        }

        @Override
        protected void handleTransferEncodingChunkedWithContentLength(HttpMessage message) {
            super.handleTransferEncodingChunkedWithContentLength(message);
            message.setDecoderResult(DecoderResult.failure(new IllegalArgumentException(
                    "both Transfer-Encoding and Content-Length")));
        }

        private void checkFraming(HttpRequest request) {
            if (request.decoderResult().isFailure()) {
                reject(request, null);
                return;
            }
            HttpVersion v = request.protocolVersion();
            if (v != HttpVersion.HTTP_1_1 && v != HttpVersion.HTTP_1_0) {
                // Netty parses http/1.1, HTTP/1.2 and the like into other objects, and then skips its
                // own Transfer-Encoding with Content-Length rule: only the two versions, as written.
                reject(request, "HTTP version must be HTTP/1.1 or HTTP/1.0 as written, was '" + v.text() + "'");
                return;
            }
            HttpHeaders h = request.headers();
            // Most requests carry no Transfer-Encoding: a lookup, not a list, for them.
            List<String> te = h.contains(HttpHeaderNames.TRANSFER_ENCODING) ? h.getAll(HttpHeaderNames.TRANSFER_ENCODING)
                    : List.of();
            String problem = RequestFraming.problem(request.protocolVersion().text(), request.method().name(),
                    request.uri(), h.getAll(HttpHeaderNames.HOST), te, h.contains(HttpHeaderNames.CONTENT_LENGTH));
            if (problem != null) {
                reject(request, problem);
                return;
            }
            String target = RequestFraming.originForm(request.uri());
            problem = RequestFraming.pathProblem(target);
            if (problem != null) {
                reject(request, problem);
            } else {
                request.setUri(RequestFraming.normalPath(target));
            }
        }

        /** Marks {@code request} failed, asks no body of the client, and stops reading the connection's bytes. */
        private void reject(HttpRequest request, String problem) {
            if (problem != null) {
                request.setDecoderResult(DecoderResult.failure(new IllegalArgumentException(problem)));
            }
            request.headers().remove(HttpHeaderNames.EXPECT); // no 100 Continue for a request about to get 400
            rejecting = true;
        }
    }

    private final class Encoder extends HttpResponseEncoder {

        private HttpMethod method;

        @Override
        protected boolean isContentAlwaysEmpty(HttpResponse msg) {
            if (msg.status().codeClass() == HttpStatusClass.INFORMATIONAL) {
                return super.isContentAlwaysEmpty(msg); // a 100 Continue answers no request of its own
            }
            method = methods.poll();
            return HttpMethod.HEAD.equals(method) || super.isContentAlwaysEmpty(msg);
        }

        @Override
        protected void sanitizeHeadersBeforeEncode(HttpResponse msg, boolean isAlwaysEmpty) {
            if (!isAlwaysEmpty && HttpMethod.CONNECT.equals(method) && msg.status().codeClass() == HttpStatusClass.SUCCESS) {
                msg.headers().remove(HttpHeaderNames.TRANSFER_ENCODING); // RFC 9110 9.3.6: a tunnel has no framing
                return;
            }
            super.sanitizeHeadersBeforeEncode(msg, isAlwaysEmpty);
        }
    }
}
