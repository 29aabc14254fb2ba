package io.heartgate.scheduler.proxy;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.routing.WarmFirst;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.status.Ramp;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.OtelTracing;
import io.heartgate.scheduler.tracing.Tracing;
import io.heartgate.scheduler.trust.ApiKeys;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The whole request path on in-memory channels, for the cost meter (the benchmarks module's
 * {@code RequestPathBenchmark}) and the allocation-budget test: a client's request bytes enter
 * the proxy port's pipeline (codec, aggregator, client connection), pass the stages, routing and
 * the relay, go out through the node connection's HTTP codec, and the node's answer bytes come
 * back the same way. No sockets and no threads: everything runs on the caller's thread, on
 * Netty's {@link EmbeddedChannel}s, so what a request costs is what the proxy's own code does,
 * and the bytes it allocates can be counted per thread. Wired as {@link ProxyServer} wires one
 * event loop, with its defaults (warm first on, round robin unless a scenario says otherwise).
 * Not thread-safe: one instance per thread. Call it as an event loop runs: on a Netty
 * {@code FastThreadLocalThread}, or inside {@code FastThreadLocalThread.runWithFastThreadLocal};
 * elsewhere Netty allocates the objects it recycles on a loop, and the count would not be a loop's.
 */
public final class InMemoryProxy implements AutoCloseable {

    /** The model every node serves. */
    static final String MODEL = "bench-model";
    private static final int NODES = 3;
    private static final String KEY = "hg-bench-key-0123456789abcdef";

    /** What one call of {@link #exchange} sends and what the node answers. */
    public enum Scenario {
        /** A small non-streamed chat completion (about 400 bytes each way), round robin. */
        CHAT,
        /** An OpenAI SSE stream of 20 chunks, each arriving on its own, then {@code [DONE]}. */
        SSE,
        /** An Ollama {@code /api/chat} NDJSON stream of 20 lines, then the {@code done} line. */
        NDJSON,
        /** {@link #CHAT} with API keys on: a key checked and removed, rpm= and tpm= limits debited. */
        KEYS,
        /** {@link #CHAT} with {@code --strategy affinity}: a key read from the body, a ring walked. */
        AFFINITY,
        /**
         * Two chat completions on one node of capacity 1: the second waits in the gateway queue until
         * the first's answer frees the slot. One call is two requests.
         */
        QUEUED,
        /**
         * {@link #SSE} with traces on: every request sampled, its server and attempt spans recorded
         * and batched as in production, then dropped where they would be sent (sending is the SDK's
         * own thread's work, not the event loop's).
         */
        TRACED
    }

    private final Scenario scenario;
    private final ByteBufAllocator alloc = ByteBufAllocator.DEFAULT;
    private final List<EmbeddedChannel> nodes = new ArrayList<>();
    private final List<EmbeddedChannel> clients = new ArrayList<>();
    private final byte[] request;
    private final byte[][] answer;
    private final ProxyParts.Loop loop;
    private final Tracing tracing;
    private long nextSweepNanos;
    private long answerBytes;
    private int lastStatusLineCount;

    private InMemoryProxy(Scenario scenario, ProxyConfig config) {
        this.scenario = scenario;
        Ticker ticker = Ticker.SYSTEM;
        Clock clock = Clock.systemUTC();
        boolean queued = scenario == Scenario.QUEUED;
        this.tracing = scenario == Scenario.TRACED ? OtelTracing.dropping(ticker) : Tracing.OFF;
        List<Node> list = new ArrayList<>();
        for (int i = 0; i < (queued ? 1 : NODES); i++) {
            Heartbeat hb = Heartbeat.builder("node-" + (i + 1), "http://127.0.0.1:" + (19001 + i)).instance("i1")
                    .seq(1L).state(NodeState.UP).intervalMs(1000).models(List.of(MODEL))
                    .backend(scenario == Scenario.NDJSON ? "ollama" : "vllm").capacity(queued ? 1 : null).build();
            list.add(Node.of(hb, Instant.now(clock), new InFlight()));
        }
        TableSnapshot table = new TableSnapshot(1, List.copyOf(list));
        PassiveHealth health = new PassiveHealth(clock, config.ejectAfter(), config.ejectFor(), Duration.ofMinutes(5));
        RouteSelector selector = new RouteSelector(scenario == Scenario.AFFINITY ? Strategy.AFFINITY.create()
                : Strategy.ROUND_ROBIN.create(), Ramp.NONE, () -> ThreadLocalRandom.current().nextDouble(),
                new WarmFirst(true, 4), clock);
        ApiKeys keys = ApiKeys.parse("bench-caller " + ApiKeys.hash(KEY) + " rpm=1000000000 tpm=1000000000\n");
        Stages.Access access = scenario == Scenario.KEYS ? new Stages.Access(() -> keys, null, false)
                : Stages.Access.OPEN;
        RequestMetrics metrics = new RequestMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), ticker);
        ProxyCounters counters = new ProxyCounters();
        Draining draining = new Draining();
        ProxyParts parts = new ProxyParts(config, new ProxyParts.Sources(() -> table, selector, health, health, counters,
                metrics, ticker, tracing), access, List.of());
        loop = parts.loop(this::open, draining);
        HttpDecoderConfig decoderConfig = new HttpDecoderConfig().setMaxInitialLineLength(8192)
                .setMaxHeaderSize(64 * 1024).setMaxChunkSize(64 * 1024);
        for (int i = 0; i < (queued ? 2 : 1); i++) {
            EmbeddedChannel ch = new EmbeddedChannel();
            ch.pipeline().addLast(new ServerCodec(decoderConfig, loop.timeouts().coarse()),
                    new RequestAggregator(config.maxBodyBytes(), counters), parts.connection(loop, draining));
            ch.pipeline().fireChannelActive();
            clients.add(ch);
        }
        this.nextSweepNanos = ticker.nanos();
        this.request = requestBytes(scenario);
        this.answer = answerParts(scenario);
    }

    /**
     * Builds the path for {@code scenario} with the proxy settings of {@code config} (its port, loops and
     * transport are not used), with one client connection (two for {@link Scenario#QUEUED}).
     */
    public static InMemoryProxy of(Scenario scenario, ProxyConfig config) {
        return new InMemoryProxy(scenario, config);
    }

    /** Returns the requests one call of {@link #exchange} makes. */
    public int requestsPerCall() {
        return scenario == Scenario.QUEUED ? 2 : 1;
    }

    /**
     * Sends the scenario's request(s) through the proxy, answers each at the node and reads the
     * client's answer; returns the answer bytes the client got.
     *
     * @throws IllegalStateException when a request does not reach a node or an answer is not a 200
     */
    public long exchange() {
        long now = Ticker.SYSTEM.nanos();
        if (now - nextSweepNanos >= 0) { // the loop's periodic work, as often as on a real loop
            nextSweepNanos = now + LoopSweep.EVERY_MS * 1_000_000;
            loop.sweep().run();
        }
        answerBytes = 0;
        lastStatusLineCount = 0;
        for (EmbeddedChannel client : clients) {
            client.writeInbound(copy(request));
        }
        for (int served = 0; served < clients.size(); served++) {
            EmbeddedChannel node = nodeWithRequest();
            if (node == null) {
                throw new IllegalStateException(scenario + ": request " + (served + 1) + " reached no node");
            }
            for (byte[] part : answer) {
                node.writeInbound(copy(part));
            }
            for (EmbeddedChannel client : clients) {
                client.runPendingTasks(); // a queued request leaves the queue by a task on its loop
                drain(client);
            }
        }
        if (lastStatusLineCount != clients.size()) {
            throw new IllegalStateException(scenario + ": " + lastStatusLineCount + " answers of 200 for "
                    + clients.size() + " requests");
        }
        return answerBytes;
    }

    private ByteBuf copy(byte[] bytes) {
        return alloc.buffer(bytes.length).writeBytes(bytes); // as a socket read fills a pooled buffer
    }

    private EmbeddedChannel nodeWithRequest() {
        for (EmbeddedChannel node : nodes) {
            node.runPendingTasks();
            boolean got = false;
            Object o;
            while ((o = node.readOutbound()) != null) {
                got = true;
                ReferenceCountUtil.release(o);
            }
            if (got) {
                return node;
            }
        }
        return null;
    }

    private void drain(EmbeddedChannel client) {
        Object o;
        while ((o = client.readOutbound()) != null) {
            if (o instanceof ByteBuf b) {
                int n = b.readableBytes();
                if (n >= 15 && b.getByte(b.readerIndex()) == 'H' && b.getByte(b.readerIndex() + 9) == '2'
                        && b.getByte(b.readerIndex() + 10) == '0' && b.getByte(b.readerIndex() + 11) == '0') {
                    lastStatusLineCount++;
                }
                answerBytes += n;
            }
            ReferenceCountUtil.release(o);
        }
    }

    private void open(UpstreamConnection handler) {
        EmbeddedChannel ch = new EmbeddedChannel(new HttpClientCodec(8192, 64 * 1024, 64 * 1024), handler);
        nodes.add(ch);
        handler.opened(ch, ch.newSucceededFuture());
    }

    /** Closes every channel and releases what they hold. */
    @Override
    public void close() {
        clients.forEach(EmbeddedChannel::finishAndReleaseAll);
        nodes.forEach(EmbeddedChannel::finishAndReleaseAll);
        tracing.close();
    }

    private static byte[] requestBytes(Scenario scenario) {
        String path = (scenario == Scenario.NDJSON ? Endpoint.OLLAMA_CHAT : Endpoint.OPENAI_CHAT).path();
        boolean sse = scenario == Scenario.SSE || scenario == Scenario.TRACED;
        String body = "{\"model\":\"" + MODEL + "\",\"messages\":[{\"role\":\"system\",\"content\":\"You are a "
                + "helpful assistant.\"},{\"role\":\"user\",\"content\":\"Say hello\"}]"
                + (sse ? ",\"stream\":true" : scenario == Scenario.NDJSON ? "" : ",\"stream\":false") + "}";
        String head = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:19080\r\nContent-Type: application/json\r\n"
                + (scenario == Scenario.KEYS ? "Authorization: Bearer " + KEY + "\r\n" : "")
                + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n";
        return (head + body).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[][] answerParts(Scenario scenario) {
        List<String> parts = new ArrayList<>();
        switch (scenario) {
            case SSE, TRACED -> {
                parts.add("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                        + "transfer-encoding: chunked\r\n\r\n");
                for (int i = 0; i < 20; i++) {
                    parts.add(chunk("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\","
                            + "\"created\":1764900000,\"model\":\"" + MODEL + "\",\"choices\":[{\"index\":0,"
                            + "\"delta\":{\"content\":\" tok" + i + "\"},\"finish_reason\":null}]}\n\n"));
                }
                parts.add(chunk("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":"
                        + "1764900000,\"model\":\"" + MODEL + "\",\"choices\":[],\"usage\":{\"prompt_tokens\":20,"
                        + "\"completion_tokens\":20,\"total_tokens\":40}}\n\ndata: [DONE]\n\n") + "0\r\n\r\n");
            }
            case NDJSON -> {
                parts.add("HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n");
                for (int i = 0; i < 20; i++) {
                    parts.add(chunk("{\"model\":\"" + MODEL + "\",\"created_at\":\"2026-12-05T10:00:00.000Z\","
                            + "\"message\":{\"role\":\"assistant\",\"content\":\" tok" + i + "\"},\"done\":false}\n"));
                }
                parts.add(chunk("{\"model\":\"" + MODEL + "\",\"created_at\":\"2026-12-05T10:00:00.000Z\",\"message\":"
                        + "{\"role\":\"assistant\",\"content\":\"\"},\"done_reason\":\"stop\",\"done\":true,"
                        + "\"total_duration\":1000000,\"prompt_eval_count\":20,\"eval_count\":20}\n") + "0\r\n\r\n");
            }
            default -> {
                String body = "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":1764900000,"
                        + "\"model\":\"" + MODEL + "\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                        + "\"content\":\"Hello! How can I help you today? I am a simulated node answering a benchmark "
                        + "request.\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":20,"
                        + "\"completion_tokens\":32,\"total_tokens\":52}}";
                parts.add("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                        + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body);
            }
        }
        byte[][] out = new byte[parts.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = parts.get(i).getBytes(StandardCharsets.UTF_8);
        }
        return out;
    }

    private static String chunk(String data) {
        return Integer.toHexString(data.getBytes(StandardCharsets.UTF_8).length) + "\r\n" + data + "\r\n";
    }
}
