package io.heartgate.scheduler;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Clients sending small chats back to back through a cluster's proxy, as in the resilience trials,
 * recording each request's start, end, status and answering node. Stopped and joined by
 * {@link #stop()}; {@link #close()} also interrupts whatever still runs.
 */
final class ChatLoad implements AutoCloseable {

    static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    /** One request: nanoTime at its start and end, its status (-1: no answer) and node (or the error). */
    record Result(long startNanos, long endNanos, int status, String node) {
    }

    private final List<Result> results = new CopyOnWriteArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final ExecutorService clients;

    static final String STREAM = "{\"model\":\"llama3:8b\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    /** Starts {@code n} clients at once, sending non-streaming chats. */
    ChatLoad(Cluster cluster, int n) {
        this(cluster, n, false);
    }

    /** Starts {@code n} clients at once; {@code stream}: streaming chats, read to their end. */
    ChatLoad(Cluster cluster, int n, boolean stream) {
        clients = Executors.newFixedThreadPool(n);
        for (int i = 0; i < n; i++) {
            clients.submit(() -> {
                while (running.get()) {
                    long start = System.nanoTime();
                    int status;
                    String node;
                    try {
                        HttpResponse<String> r = cluster.http.send(HttpRequest.newBuilder(cluster.proxy("/v1/chat/completions"))
                                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(stream ? STREAM : CHAT)).build(),
                                HttpResponse.BodyHandlers.ofString());
                        status = r.statusCode();
                        node = r.headers().firstValue("x-upstream-node").orElse(null);
                    } catch (Exception e) {
                        status = -1;
                        node = e.toString();
                    }
                    results.add(new Result(start, System.nanoTime(), status, node));
                }
                return null;
            });
        }
    }

    List<Result> results() {
        return results;
    }

    long servedBy(String node) {
        return results.stream().filter(r -> node.equals(r.node())).count();
    }

    /** Returns how many requests started after {@code nanos}. */
    long startedAfter(long nanos) {
        return results.stream().filter(r -> r.startNanos() > nanos).count();
    }

    /** Lets every client finish its current request, then stops; fails if one is still stuck after 30 s. */
    void stop() throws InterruptedException {
        running.set(false);
        clients.shutdown();
        if (!clients.awaitTermination(30, TimeUnit.SECONDS)) {
            throw new AssertionError("a client was still waiting 30 s after the load stopped");
        }
    }

    /** Returns a one-line account of the results so far: counts by status and node, and the first failures. */
    String summary() {
        Map<String, Long> byOutcome = new TreeMap<>();
        for (Result r : results) {
            byOutcome.merge(r.status() + " " + (r.status() == 200 ? r.node() : ""), 1L, Long::sum);
        }
        return byOutcome + " first failures: " + results.stream().filter(r -> r.status() != 200).limit(3)
                .map(Result::node).toList();
    }

    /** Prints each failed request, relative to {@code t0Nanos}, for the test log. */
    void printFailures(String tag, long t0Nanos) {
        for (Result r : results) {
            if (r.status() != 200) {
                System.out.printf("[%s] failed: start %+d ms, end %+d ms after T0: %s%n", tag,
                        TimeUnit.NANOSECONDS.toMillis(r.startNanos() - t0Nanos),
                        TimeUnit.NANOSECONDS.toMillis(r.endNanos() - t0Nanos), r.node());
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        clients.shutdownNow();
        clients.awaitTermination(10, TimeUnit.SECONDS);
    }
}
