package io.heartgate.scheduler.proxy;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.ProxyConfigBuilder;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.stage.Stage;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.routing.WarmFirst;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.status.Ramp;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.Tracing;
import io.heartgate.testkit.MutableClock;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * The relay of one event loop on embedded channels and a fake clock: a client connection, the
 * stages, the exchange, the pool and the timeouts, with nodes whose connections the test scripts
 * (accept, refuse, or leave pending) and whose messages it writes by hand. No sockets, no sleeps.
 */
final class EmbeddedRelay {

    static final long FIRST_BYTE_MS = 1000;
    static final long IDLE_MS = 400;
    static final long KEEP_ALIVE_MS = 5000;
    static final long HEADER_MS = 2000;
    static final long BODY_MS = 3000;
    static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[]}";

    /** How a node takes the next connection opened to it. */
    enum Accept { AT_ONCE, REFUSE, LATER }

    final AtomicLong nanos = new AtomicLong(1_000_000_000_000L);
    final MutableClock clock = new MutableClock(Instant.parse("2026-12-01T10:00:00Z"));
    final Timeouts timeouts;
    final Draining draining = new Draining();
    final PassiveHealth health = new PassiveHealth(clock, 3, Duration.ofSeconds(10), Duration.ofMinutes(5));
    final ProxyCounters counters = new ProxyCounters();
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final Map<String, Accept> accept = new HashMap<>();
    /** Every connection opened, per node id, in order. */
    final Map<String, List<EmbeddedChannel>> opened = new HashMap<>();
    final ArrayDeque<ChannelPromise> pending = new ArrayDeque<>();
    final UpstreamPool pool;
    final List<Node> nodes = new ArrayList<>();
    private TableSnapshot table = TableSnapshot.EMPTY;
    final EmbeddedChannel client;
    private final ProxyParts parts;
    private final ProxyParts.Loop loop;
    final GatewayQueue queue;
    private final List<EmbeddedChannel> clients = new ArrayList<>();

    EmbeddedRelay(String... nodeIds) {
        this(List.of(), nodeIds);
    }

    /** With {@code extraStages} before the standard ones. */
    EmbeddedRelay(List<Stage> extraStages, String... nodeIds) {
        this(extraStages, Stages.Access.OPEN, nodeIds);
    }

    /** With {@code extraStages} before the standard ones, which have {@code access}. */
    EmbeddedRelay(List<Stage> extraStages, Stages.Access access, String... nodeIds) {
        this(FIRST_BYTE_MS, 0, extraStages, access, nodeIds);
    }

    /** With {@code access}'s stages and no extra ones. */
    EmbeddedRelay(Stages.Access access, String... nodeIds) {
        this(FIRST_BYTE_MS, 0, List.of(), access, nodeIds);
    }

    /** With the given first-byte and stall timeouts (0: the stall rule off). */
    static EmbeddedRelay withStallRule(long firstByteMs, long stallMs, String... nodeIds) {
        return new EmbeddedRelay(firstByteMs, stallMs, List.of(), Stages.Access.OPEN, false, nodeIds);
    }

    /**
     * As {@link #withStallRule}, the nodes being Ollama servers with no model in memory, and warm
     * first on (a cap of 4), so that requests count as waiting for their node to load the model.
     */
    static EmbeddedRelay coldOllamaWithStallRule(long firstByteMs, long stallMs, String... nodeIds) {
        return new EmbeddedRelay(firstByteMs, stallMs, List.of(), Stages.Access.OPEN, true, nodeIds);
    }

    private EmbeddedRelay(long firstByteMs, long stallMs, List<Stage> extraStages, Stages.Access access,
                          String... nodeIds) {
        this(firstByteMs, stallMs, extraStages, access, false, nodeIds);
    }

    private EmbeddedRelay(long firstByteMs, long stallMs, List<Stage> extraStages, Stages.Access access,
                          boolean coldOllama, String... nodeIds) {
        for (String id : nodeIds) {
            Heartbeat hb = Heartbeat.builder(id, "http://127.0.0.1:" + (9000 + nodes.size())).instance("i1").seq(1L)
                    .state(NodeState.UP).intervalMs(1000).models(List.of("llama3:8b"))
                    .backend(coldOllama ? "ollama" : null).build();
            nodes.add(Node.of(hb, clock.instant(), new InFlight()));
            accept.put(id, Accept.AT_ONCE);
        }
        table = new TableSnapshot(1, nodes);
        RouteSelector selector = coldOllama
                ? new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0), Ramp.NONE,
                        () -> 0.0, new WarmFirst(true, 4), clock)
                : new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0));
        ProxyConfig config = new ProxyConfigBuilder().firstByteTimeout(Duration.ofMillis(firstByteMs))
                .idleTimeout(Duration.ofMillis(IDLE_MS)).stallTimeout(Duration.ofMillis(stallMs)).retries(2)
                .keepAliveTimeout(Duration.ofMillis(KEEP_ALIVE_MS)).headerTimeout(Duration.ofMillis(HEADER_MS))
                .bodyTimeout(Duration.ofMillis(BODY_MS)).maxQueue(1000).queueTimeout(Duration.ofSeconds(60)).build();
        parts = new ProxyParts(config, new ProxyParts.Sources(() -> table, selector, health, health, counters,
                new RequestMetrics(registry, Ticker.ofNanos(nanos::get)), Ticker.ofNanos(nanos::get), Tracing.OFF), access,
                extraStages);
        loop = parts.loop(this::open, draining);
        timeouts = loop.timeouts();
        pool = loop.pool();
        queue = parts.queue();
        client = newClient();
    }

    /**
     * Opens a client connection with the proxy port's codec and body aggregator in front, for tests
     * that write raw bytes (a head byte by byte, a trickled body) and read the encoded answer.
     */
    EmbeddedChannel newRawClient(long maxBodyBytes) {
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.freezeTime();
        ch.pipeline().addLast(new ServerCodec(new HttpDecoderConfig(), timeouts.coarse()),
                new RequestAggregator(maxBodyBytes, counters), parts.connection(loop, draining));
        ch.pipeline().fireChannelActive();
        clients.add(ch);
        return ch;
    }

    /** Moves the fake clock, and every client channel's scheduled-task clock, on by {@code ms}. */
    void advanceAll(long ms) {
        advance(ms);
        for (EmbeddedChannel c : clients) {
            c.advanceTimeBy(ms, TimeUnit.MILLISECONDS);
            c.runScheduledPendingTasks();
        }
    }

    /** Opens another client connection to the same relay (one connection sends one request at a time). */
    EmbeddedChannel newClient() {
        EmbeddedChannel ch = new EmbeddedChannel(parts.connection(loop, draining));
        ch.freezeTime();
        clients.add(ch);
        return ch;
    }

    private String idOf(Target t) {
        for (Node n : nodes) {
            if (Target.of(n.url()).equals(t)) {
                return n.id();
            }
        }
        throw new IllegalArgumentException("no node at " + t);
    }

    private void open(UpstreamConnection handler) {
        String id = idOf(handler.target());
        EmbeddedChannel ch = new EmbeddedChannel(handler);
        opened.computeIfAbsent(id, k -> new ArrayList<>()).add(ch);
        switch (accept.get(id)) {
            case AT_ONCE -> handler.opened(ch, ch.newSucceededFuture());
            case REFUSE -> {
                ChannelFuture failed = ch.newFailedFuture(new ConnectException("Connection refused"));
                handler.opened(ch, failed);
                ch.close();
            }
            case LATER -> {
                ChannelPromise p = ch.newPromise();
                pending.add(p);
                handler.opened(ch, p);
            }
        }
    }

    /** Returns the newest connection opened to {@code id}. */
    EmbeddedChannel upstream(String id) {
        List<EmbeddedChannel> list = opened.get(id);
        return list.get(list.size() - 1);
    }

    int connections(String id) {
        return opened.getOrDefault(id, List.of()).size();
    }

    /** Moves the fake clock on by {@code ms} and runs one sweep of the timeouts and the pool. */
    void advance(long ms) {
        nanos.addAndGet(ms * 1_000_000);
        loop.sweep().run();
    }

    /** Publishes a new table snapshot in which {@code id} is in {@code state}; a null state removes it. */
    void nodeBecomes(String id, NodeState state) {
        List<Node> next = new ArrayList<>();
        for (Node n : nodes) {
            if (!n.id().equals(id)) {
                next.add(n);
            } else if (state != null) {
                Heartbeat hb = n.heartbeat();
                next.add(new Node(Heartbeat.builder(hb.nodeId(), hb.url()).instance(hb.instance()).seq(hb.seq() + 1)
                        .state(state).intervalMs(hb.intervalMs()).models(hb.models()).build(), n.lastSeen(), n.models(),
                        n.loaded(), n.inFlight(), n.others()));
            }
        }
        nodes.clear();
        nodes.addAll(next);
        table = new TableSnapshot(table.version() + 1, List.copyOf(next));
    }

    /** Publishes a new table snapshot in which {@code id} serves exactly {@code models}. */
    void nodeServes(String id, String... models) {
        nodeBeats(id, b -> b.models(List.of(models)));
    }

    /** Publishes a new table snapshot in which {@code id}'s heartbeat is changed by {@code tune}. */
    void nodeBeats(String id, UnaryOperator<Heartbeat.Builder> tune) {
        List<Node> next = new ArrayList<>();
        for (Node n : nodes) {
            Heartbeat hb = n.heartbeat();
            next.add(!n.id().equals(id) ? n : Node.of(tune.apply(hb.toBuilder().seq(hb.seq() + 1)).build(),
                    n.lastSeen(), n.inFlight()));
        }
        nodes.clear();
        nodes.addAll(next);
        table = new TableSnapshot(table.version() + 1, List.copyOf(next));
    }

    /** Moves the client channel's scheduled-task clock (the keep-alive check) and the fake clock together. */
    void advanceClient(long ms) {
        advance(ms);
        client.advanceTimeBy(ms, TimeUnit.MILLISECONDS);
        client.runScheduledPendingTasks();
    }

    static FullHttpRequest post(String uri, String body) {
        FullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, uri,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        r.headers().set(HttpHeaderNames.HOST, "front.example").setInt(HttpHeaderNames.CONTENT_LENGTH,
                r.content().readableBytes());
        return r;
    }

    /** Returns what the client got so far, releasing it: {@code [status]} per response head, then body text. */
    String clientText() {
        StringBuilder sb = new StringBuilder();
        Object o;
        while ((o = client.readOutbound()) != null) {
            if (o instanceof HttpResponse r) {
                sb.append('[').append(r.status().code()).append(']');
            }
            if (o instanceof HttpContent c) {
                sb.append(c.content().toString(StandardCharsets.UTF_8));
            }
            ReferenceCountUtil.release(o);
        }
        return sb.toString();
    }

    Node node(String id) {
        return table.node(id);
    }

    void close() {
        clients.forEach(EmbeddedChannel::finishAndReleaseAll);
        opened.values().forEach(list -> list.forEach(EmbeddedChannel::finishAndReleaseAll));
    }
}
