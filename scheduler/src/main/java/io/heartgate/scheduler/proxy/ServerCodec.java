package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.proxy.policy.RequestFraming;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.CombinedChannelDuplexHandler;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpVersion;
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

    private final ArrayDeque<HttpMethod> methods = new ArrayDeque<>();

    ServerCodec(HttpDecoderConfig config) {
        init(new Decoder(config), new Encoder());
    }

    private final class Decoder extends HttpRequestDecoder {

        Decoder(HttpDecoderConfig config) {
            super(config);
        }

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf buffer, List<Object> out) throws Exception {
            int before = out.size();
            super.decode(ctx, buffer, out);
            for (int i = before; i < out.size(); i++) {
                if (out.get(i) instanceof HttpRequest request) {
                    methods.add(request.method());
                    checkFraming(request);
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
                return;
            }
            String problem = RequestFraming.problem(request.protocolVersion() == HttpVersion.HTTP_1_0, request.uri(),
                    request.headers().getAll(HttpHeaderNames.HOST),
                    request.headers().getAll(HttpHeaderNames.TRANSFER_ENCODING));
            if (problem != null) {
                request.setDecoderResult(DecoderResult.failure(new IllegalArgumentException(problem)));
            } else {
                request.setUri(RequestFraming.originForm(request.uri()));
            }
        }
    }

    private final class Encoder extends HttpResponseEncoder {

        private HttpMethod method;

        @Override
        protected boolean isContentAlwaysEmpty(HttpResponse msg) {
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
