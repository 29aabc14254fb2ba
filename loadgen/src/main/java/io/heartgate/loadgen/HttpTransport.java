package io.heartgate.loadgen;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * Sends requests with the JDK's asynchronous {@link HttpClient}, reading each answer as a stream of
 * lines so the first chunk is seen the moment it arrives. Thread-safe.
 */
public final class HttpTransport implements Transport {

    private final HttpClient client;

    /** Creates it on {@code client}, which the caller builds (executor, HTTP version) and owns. */
    public HttpTransport(HttpClient client) {
        this.client = client;
    }

    @Override
    public Call send(Outgoing request, Listener listener) {
        HttpRequest.Builder b = HttpRequest.newBuilder(request.uri())
                .timeout(request.timeout())
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(request.body(), StandardCharsets.UTF_8));
        request.headers().forEach(b::header);
        if (request.bearer() != null) {
            b.header("authorization", "Bearer " + request.bearer());
        }
        Lines lines = new Lines(listener);
        CompletableFuture<HttpResponse<Void>> future = client.sendAsync(b.build(), info -> {
            listener.headers(info.statusCode());
            info.headers().firstValue("x-upstream-node").ifPresent(listener::upstream);
            info.headers().firstValue("x-heartgate-affinity").ifPresent(listener::affinity);
            // A null separator splits at \n, \r\n and \r alike, which NDJSON and SSE both need.
            return HttpResponse.BodySubscribers.fromLineSubscriber(lines, s -> null, StandardCharsets.UTF_8, null);
        });
        future.whenComplete((response, error) -> {
            if (error != null) {
                listener.failed(error);
            }
        });
        return () -> {
            lines.cancel();
            future.cancel(true);
        };
    }

    /** Passes lines on as they come; asks for all of them, since the listener never blocks. */
    private static final class Lines implements Flow.Subscriber<String> {
        private final Listener listener;
        private volatile Flow.Subscription subscription;
        private volatile boolean cancelled;

        Lines(Listener listener) {
            this.listener = listener;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            if (cancelled) {
                s.cancel();
            } else {
                s.request(Long.MAX_VALUE);
            }
        }

        @Override
        public void onNext(String line) {
            listener.line(line);
        }

        @Override
        public void onError(Throwable error) {
            listener.failed(error);
        }

        @Override
        public void onComplete() {
            listener.complete();
        }

        void cancel() {
            cancelled = true;
            Flow.Subscription s = subscription;
            if (s != null) {
                s.cancel();
            }
        }
    }
}
