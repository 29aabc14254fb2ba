package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.ProxyConfigBuilder;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.Tracing;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Hostile clients against the real proxy on loopback, each bounded in memory and time by a
 * setting, with the bound measured here: ten thousand idle connections (heap per connection, the
 * keep-alive timeout, {@code --max-connections}); a client reading a fast stream slowly (the bytes
 * the proxy holds for it, and the node held back by back-pressure); heads and bodies trickled in a
 * byte at a time ({@code --header-timeout}, {@code --body-timeout}: 408 and closed). Heap figures
 * are the used heap after a full collection, before, at the peak and after.
 */
class HostileClientsIT {

    private static final String BODY = "{\"model\":\"llama3:8b\",\"messages\":[]}";

    private final List<AutoCloseable> closing = new ArrayList<>();
    private ProxyServer proxy;
    private ProxyCounters counters;

    @AfterEach
    void tearDown() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        for (AutoCloseable c : closing) {
            c.close();
        }
    }

    private void start(UnaryOperator<ProxyConfigBuilder> config, String... urls) {
        NodeTable table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        for (int i = 0; i < urls.length; i++) {
            table.apply(Heartbeat.builder("n" + (i + 1), urls[i]).instance("i1").seq(1L).state(NodeState.UP)
                    .intervalMs(60_000).models(List.of("llama3:8b")).build(), Instant.now());
        }
        table.publish();
        ProxyConfig c = config.apply(new ProxyConfigBuilder()).build();
        PassiveHealth health = new PassiveHealth(Clock.systemUTC(), c.ejectAfter(), c.ejectFor(), Duration.ofMinutes(5));
        counters = new ProxyCounters();
        proxy = ProxyServer.start(c, table::snapshot, new RouteSelector(Strategy.ROUND_ROBIN.create()), health, health,
                counters, new RequestMetrics(new SimpleMeterRegistry(), Ticker.SYSTEM), Ticker.SYSTEM, new Draining(),
                Stages.Access.OPEN, null, Tracing.OFF);
    }

    private static long heapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static String mib(long bytes) {
        return String.format("%.1f MiB", bytes / 1048576.0);
    }

    private Socket connect() throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
        closing.add(s);
        return s;
    }

    @Test
    void tenThousandIdleConnectionsCostAFewKibEachAndCloseAtTheKeepAliveTimeout() throws Exception {
        // The keep-alive timeout leaves room for the proxy to accept all 10,050 on a slow machine
        // before the first of them times out (6 s did not, once: accepting lags the clients' connects).
        start(b -> b.keepAliveTimeout(Duration.ofSeconds(15)).maxConnections(10_000).eventLoops(4));
        long before = heapAfterGc();
        Process clients = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-cp", Path.of("target", "test-classes").toString(), IdleClients.class.getName(),
                String.valueOf(proxy.port()), "10050").redirectErrorStream(true).start();
        closing.add(() -> {
            clients.destroyForcibly();
            clients.waitFor(10, TimeUnit.SECONDS);
        });
        BufferedReader out = new BufferedReader(new InputStreamReader(clients.getInputStream(), StandardCharsets.UTF_8));
        String opened = out.readLine();
        System.out.println("[hostile-it] idle clients: " + opened);
        // Both counts exact: the bound holds across event loops accepting at once.
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(new long[] {proxy.clientConnections(),
                counters.get(Counter.REFUSED_CONNECTIONS)}).as("open, refused; clients " + opened)
                .containsExactly(10_000, 50));
        long open = System.nanoTime();
        long peak = heapAfterGc();
        long perConnection = (peak - before) / 10_000;
        System.out.printf("[hostile-it] 10000 idle connections: heap %s before, %s with them: %d bytes each%n",
                mib(before), mib(peak), perConnection);
        assertThat(perConnection).as("heap bytes per idle connection").isLessThan(8 * 1024);

        // Nothing sent: the keep-alive timeout closes every one of them (checked every 3.75 s here).
        await().atMost(Duration.ofSeconds(15 + 4 + 5)).until(() -> proxy.clientConnections() == 0);
        long closedAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - open);
        long after = heapAfterGc();
        System.out.printf("[hostile-it] all closed %d ms after the last opened; heap %s after%n", closedAfterMs, mib(after));
        assertThat(after - before).as("heap left after they closed").isLessThan((peak - before) / 4 + 4 * 1048576);
    }

    @Test
    void aSlowReaderHoldsBackTheNodeInsteadOfFillingTheProxy() throws Exception {
        AtomicLong written = new AtomicLong();
        long limit = 256L * 1024 * 1024; // what the node would send if nothing held it back
        RawNode node = new RawNode((req, o) -> {
            o.write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            byte[] chunk = ("10000\r\n" + "x".repeat(65536) + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
            while (written.get() < limit) {
                o.write(chunk); // blocks once every buffer on the way is full
                written.addAndGet(65536);
            }
            o.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            return false;
        });
        closing.add(node);
        start(b -> b, node.url());
        long heapBefore = heapAfterGc();
        long directBefore = directMemory();
        long directMost = 0;

        Socket s = connect();
        s.setReceiveBufferSize(64 * 1024);
        s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + BODY.length()
                + "\r\n\r\n" + BODY).getBytes(StandardCharsets.US_ASCII));
        InputStream in = s.getInputStream();
        byte[] buf = new byte[16 * 1024];
        AtomicLong readBytes = new AtomicLong();
        AtomicLong most = new AtomicLong();
        AtomicLong mostDirect = new AtomicLong();
        AtomicReference<Throwable> readFailed = new AtomicReference<>();
        // About 16 KiB every 20 ms: 0.8 MB/s against a node far faster; paced by a timer, for 4 s.
        ScheduledExecutorService pace = Executors.newSingleThreadScheduledExecutor();
        closing.add(pace::shutdownNow);
        pace.scheduleAtFixedRate(() -> {
            try {
                int n = in.read(buf);
                if (n <= 0) {
                    throw new IOException("the stream ended: " + n);
                }
                readBytes.addAndGet(n);
                most.accumulateAndGet(proxy.bufferedForClients(), Math::max);
                mostDirect.accumulateAndGet(directMemory() - directBefore, Math::max);
            } catch (Throwable t) {
                readFailed.compareAndSet(null, t);
            }
        }, 0, 20, TimeUnit.MILLISECONDS);
        await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(6)).until(() -> readFailed.get() == null);
        pace.shutdown();
        assertThat(pace.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        long read = readBytes.get();
        long mostBuffered = most.get();
        directMost = mostDirect.get();
        long inTransit = written.get() - read;
        long heapGrowth = heapAfterGc() - heapBefore;
        System.out.printf("[hostile-it] slow reader: read %s in 4 s, the node wrote %s; the proxy held at most %d "
                        + "bytes for the client; the allocator's direct memory at most %+d bytes; heap %s%n", mib(read),
                mib(written.get()), mostBuffered, directMost, mib(heapGrowth));
        assertThat(mostBuffered).as("bytes the proxy held for the client (high-water mark 64 KiB + a read)")
                .isLessThanOrEqualTo(256 * 1024);
        assertThat(inTransit).as("bytes the node wrote that the client has not read: socket buffers only")
                .isLessThan(32L * 1024 * 1024);
        assertThat(written.get()).as("the node was held back").isLessThan(limit / 4);
        assertThat(heapGrowth).isLessThan(32L * 1024 * 1024);
        assertThat(directMost).as("direct memory the proxy's allocator took on").isLessThan(8L * 1024 * 1024);
    }

    /** Returns the direct memory Netty's default allocator (the proxy's) holds. */
    private static long directMemory() {
        return ((ByteBufAllocatorMetricProvider) ByteBufAllocator.DEFAULT).metric().usedDirectMemory();
    }

    /** Opens {@code n} connections and writes {@code text} to each a byte every 100 ms (all of them in turn); returns when all closed. */
    private List<Socket> trickle(int n, String prefix, String text, long maxMs) throws Exception {
        List<Socket> sockets = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Socket s = connect();
            s.getOutputStream().write(prefix.getBytes(StandardCharsets.US_ASCII));
            sockets.add(s);
        }
        // A byte to every socket every 100 ms, from a timer.
        ScheduledExecutorService pace = Executors.newSingleThreadScheduledExecutor();
        AtomicInteger next = new AtomicInteger();
        pace.scheduleAtFixedRate(() -> {
            int i = next.getAndIncrement();
            if (i >= text.length()) {
                return;
            }
            for (Socket s : sockets) {
                try {
                    s.getOutputStream().write(text.charAt(i));
                } catch (IOException closed) {
                    // the proxy closed it: expected
                }
            }
        }, 0, 100, TimeUnit.MILLISECONDS);
        try {
            await().atMost(Duration.ofMillis(maxMs)).until(() -> proxy.clientConnections() == 0);
        } finally {
            pace.shutdownNow();
            pace.awaitTermination(5, TimeUnit.SECONDS);
        }
        return sockets;
    }

    private static String answerOf(Socket s) throws IOException {
        s.setSoTimeout(5000);
        return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }

    @Test
    void headsSentAByteAtATimeGet408AtTheHeaderTimeoutWithTheHeapFlat() throws Exception {
        start(b -> b.headerTimeout(Duration.ofSeconds(1)));
        long before = heapAfterGc();
        String head = "POST /v1/chat/completions HTTP/1.1\r\nHost: front.example\r\nX-Padding: "
                + "y".repeat(200) + "\r\n\r\n"; // 25 s at a byte per 100 ms
        long start = System.nanoTime();
        List<Socket> sockets = trickle(1000, "P", head, 1000 + 250 + 3000);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        long after = heapAfterGc();
        System.out.printf("[hostile-it] 1000 slowloris heads: all closed after %d ms; heap %s before, %s after%n",
                tookMs, mib(before), mib(after));
        for (Socket s : sockets.subList(0, 20)) {
            assertThat(answerOf(s)).startsWith("HTTP/1.1 408").contains("request head not complete within 1s");
        }
        assertThat(counters.errors(ErrorType.REQUEST_TIMEOUT)).isEqualTo(1000);
        assertThat(after - before).isLessThan(16L * 1024 * 1024);
    }

    @Test
    void bodiesTrickledInGet408AtTheBodyTimeoutAndNoNodeSeesThem() throws Exception {
        RawNode node = new RawNode((req, o) -> {
            RawNode.respond(o, "200 OK", "", "{}");
            return true;
        });
        closing.add(node);
        start(b -> b.bodyTimeout(Duration.ofSeconds(1)), node.url());
        String padded = "{\"model\":\"llama3:8b\",\"messages\":[],\"pad\":\"" + "z".repeat(200) + "\"}";
        String head = "POST /v1/chat/completions HTTP/1.1\r\nHost: front.example\r\nContent-Length: " + padded.length()
                + "\r\n\r\n";
        long start = System.nanoTime();
        List<Socket> sockets = trickle(200, head, padded, 1000 + 250 + 3000);
        System.out.printf("[hostile-it] 200 trickled bodies: all closed after %d ms%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
        assertThat(answerOf(sockets.get(0))).startsWith("HTTP/1.1 408").contains("request body not complete within 1s");
        assertThat(counters.errors(ErrorType.REQUEST_TIMEOUT)).isEqualTo(200);
        assertThat(node.seen).isEmpty();
    }
}
