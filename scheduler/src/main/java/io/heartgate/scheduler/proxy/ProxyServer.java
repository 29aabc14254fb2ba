package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.admission.ModelWait;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.stage.Stage;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.Tracing;
import io.heartgate.scheduler.trust.ServerTls;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.resolver.dns.DnsAddressResolverGroup;
import io.netty.resolver.dns.DnsNameResolverBuilder;
import io.netty.resolver.dns.DnsServerAddressStreamProviders;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the proxy port: an HTTP/1.1 relay on Netty's event loops (io_uring or epoll on Linux),
 * each loop with its own pool of keep-alive connections to the nodes, so a request and its upstream
 * connection never leave the loop that accepted the client. A request is parsed and its framing checked
 * ({@link ServerCodec}), its body aggregated ({@link RequestAggregator}) and its facts read once, then
 * it goes through the {@link Stage}s and the relay ({@link Exchange}).
 *
 * <p>Netty directly, not Vert.x's HTTP server and client: the Vert.x stack costs more CPU per
 * request on this path, and {@code vertx-http-proxy} picks the node before the body is read and
 * replays nothing, while this proxy reads the model from a bounded body buffer first and retries that
 * body on another node. Netty's codec does all HTTP parsing and framing; what is written here is the
 * relay, the per-loop connection pool and the drain.
 */
public final class ProxyServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ProxyServer.class);

    private final Draining draining;
    private final EventLoopGroup group;
    private final DnsAddressResolverGroup resolver;
    private final ChannelGroup clients;
    private final ChannelGroup upstreams;
    private final Channel serverChannel;
    private final GatewayQueue queue;
    private final Tracing tracing;

    private ProxyServer(Draining draining, EventLoopGroup group, DnsAddressResolverGroup resolver, ChannelGroup clients,
                        ChannelGroup upstreams, Channel serverChannel, GatewayQueue queue, Tracing tracing) {
        this.draining = draining;
        this.tracing = tracing;
        this.queue = queue;
        this.clients = clients;
        this.upstreams = upstreams;
        this.group = group;
        this.resolver = resolver;
        this.serverChannel = serverChannel;
    }

    /**
     * Starts the proxy on {@code config.eventLoops()} event loops and returns once it listens.
     *
     * @param table the table's current snapshot, read once per routing decision
     * @param selector chooses each attempt's node
     * @param health passive health: told of connect failures and answers
     * @param routing which nodes routing leaves out now: passive health's ejections and flap holds
     * @param counters where the proxy counts what it does
     * @param metrics where each relayed request is recorded
     * @param ticker the monotonic clock of timeouts and latencies
     * @param draining the scheduler's shutdown flag; {@link #drain} and {@link #close} set it too
     * @param access the API keys callers need and the key nodes need
     * @param serverTls the certificate clients get, read per connection (so a renewed one applies to
     *     new connections); {@code null} for plain HTTP
     * @param tracing where each request's trace begins; the proxy closes it when it closes
     * @throws IllegalStateException when the port cannot be bound
     */
    public static ProxyServer start(ProxyConfig config, Supplier<TableSnapshot> table, RouteSelector selector,
                                    PassiveHealth health, EjectionView routing, ProxyCounters counters,
                                    RequestMetrics metrics, Ticker ticker, Draining draining, Stages.Access access,
                                    Supplier<ServerTls> serverTls, Tracing tracing) {
        SslContext tls;
        try {
            // https:// nodes: the JVM's trusted CAs, and the certificate must name the node's host.
            tls = SslContextBuilder.forClient().endpointIdentificationAlgorithm("HTTPS").build();
        } catch (SSLException e) {
            tracing.close();
            throw new IllegalStateException("cannot set up TLS for https nodes: " + e.getMessage(), e);
        }
        return start(config, table, selector, health, routing, counters, metrics, ticker, draining, access, serverTls,
                tls, tracing);
    }

    /** Starts the proxy with the given TLS client context for https nodes (tests give their own CA). */
    static ProxyServer start(ProxyConfig config, Supplier<TableSnapshot> table, RouteSelector selector,
                             PassiveHealth health, EjectionView routing, ProxyCounters counters, RequestMetrics metrics,
                             Ticker ticker, Draining draining, Stages.Access access, Supplier<ServerTls> serverTls,
                             SslContext tls) {
        return start(config, table, selector, health, routing, counters, metrics, ticker, draining, access, serverTls,
                tls, Tracing.OFF);
    }

    private static ProxyServer start(ProxyConfig config, Supplier<TableSnapshot> table, RouteSelector selector,
                                     PassiveHealth health, EjectionView routing, ProxyCounters counters,
                                     RequestMetrics metrics, Ticker ticker, Draining draining, Stages.Access access,
                                     Supplier<ServerTls> serverTls, SslContext tls, Tracing tracing) {
        Transport transport = config.transport().resolve();
        if (config.transport() != Transport.AUTO || transport == Transport.IO_URING) {
            log.info("Proxy transport: {}", transport.flagValue());
        } else {
            log.info("Proxy transport: {} ({})", transport.flagValue(), transport.whyNotFaster());
        }
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(config.eventLoops(),
                new DefaultThreadFactory("heartgate-proxy", false), transport.ioHandlerFactory());
        // Node names are resolved without blocking an event loop (hosts file first, then DNS).
        DnsAddressResolverGroup resolver = new DnsAddressResolverGroup(new DnsNameResolverBuilder()
                .datagramChannelType(transport.datagramChannel())
                .nameServerProvider(DnsServerAddressStreamProviders.platformDefault()));
        try {
            ChannelGroup upstreams = new DefaultChannelGroup("heartgate-proxy-upstreams", GlobalEventExecutor.INSTANCE);
            AllowedAddresses allowed = new AllowedAddresses(resolver, config.allowUpstream());
            ProxyParts parts = new ProxyParts(config, new ProxyParts.Sources(table, selector, health, routing, counters,
                    metrics, ticker, tracing), access, List.of());
            Map<EventLoop, ProxyParts.Loop> loops = new IdentityHashMap<>();
            group.forEach(executor -> {
                EventLoop loop = (EventLoop) executor;
                ProxyParts.Loop loopParts = parts.loop(new UpstreamConnector(loop, transport.socketChannel(), allowed, tls,
                        upstreams, config.connectTimeout()), draining);
                loops.put(loop, loopParts);
                loop.scheduleAtFixedRate(() -> {
                    try {
                        loopParts.sweep().run();
                    } catch (Throwable t) { // a periodic task that throws is never run again
                        log.error("Proxy sweep failed", t);
                    }
                }, LoopSweep.EVERY_MS, LoopSweep.EVERY_MS, TimeUnit.MILLISECONDS);
            });
            Map<EventLoop, ProxyParts.Loop> frozen = Map.copyOf(loops);
            ChannelGroup clients = new DefaultChannelGroup("heartgate-proxy-clients", GlobalEventExecutor.INSTANCE);
            int maxConnections = config.maxConnections();
            AtomicInteger admitted = new AtomicInteger(); // one count for all loops: a size check races between them
            HttpDecoderConfig decoderConfig = new HttpDecoderConfig().setMaxInitialLineLength(8192)
                    .setMaxHeaderSize(64 * 1024).setMaxChunkSize(64 * 1024);
            Channel server = new ServerBootstrap()
                    .group(group)
                    .channel(transport.serverChannel())
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ProxyParts.Loop loop = frozen.get(ch.eventLoop());
                            if (admitted.incrementAndGet() > maxConnections) { // before any handler or buffer:
                                admitted.decrementAndGet(); // the bound on idle sockets
                                counters.add(ProxyCounters.Counter.REFUSED_CONNECTIONS);
                                ch.close();
                                return;
                            }
                            ch.closeFuture().addListener(f -> admitted.decrementAndGet());
                            if (serverTls != null) {
                                ch.pipeline().addLast(serverTls.get().proxy().newHandler(ch.alloc()));
                            }
                            ch.pipeline().addLast(
                                    new ServerCodec(decoderConfig, loop.timeouts().coarse()),
                                    new RequestAggregator(config.maxBodyBytes(), counters),
                                    parts.connection(loop, draining));
                            clients.add(ch);
                            if (draining.getAsBoolean()) {
                                ch.close(); // accepted just before the listening socket closed
                            }
                        }
                    })
                    .bind(new InetSocketAddress(config.bind(), config.port()))
                    .syncUninterruptibly()
                    .channel();
            ProxyServer proxy = new ProxyServer(draining, group, resolver, clients, upstreams, server, parts.queue(), tracing);
            // The exact line scripts and tests wait for (docs/REFERENCE.md).
            log.info("proxy listening on {}:{}", config.bind(), proxy.port());
            if (serverTls != null) {
                log.info("Proxy serves HTTPS (HTTP/1.1 by ALPN) with the {}", serverTls.get());
            }
            return proxy;
        } catch (RuntimeException e) {
            tracing.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            resolver.close();
            throw new IllegalStateException("proxy cannot listen on " + config.bind() + ":" + config.port() + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * Returns the bytes the proxy holds written for client connections that their sockets have not
     * taken yet: what back-pressure bounds (a slow reader's response stops being read from its node
     * once this passes the write buffer's high-water mark).
     */
    public long bufferedForClients() {
        long sum = 0;
        for (Channel ch : clients) {
            ChannelOutboundBuffer b = ch.unsafe().outboundBuffer();
            if (b != null) {
                sum += b.totalPendingWriteBytes();
            }
        }
        return sum;
    }

    /** Registers the gauges of the client side: connections open and bytes waiting for slow readers. */
    public void bindTo(MeterRegistry registry) {
        Gauge.builder("heartgate_proxy_client_connections", this, ProxyServer::clientConnections)
                .description("Client connections open now (--max-connections)").strongReference(true).register(registry);
        Gauge.builder("heartgate_proxy_client_buffered_bytes", this, ProxyServer::bufferedForClients)
                .description("Response bytes written for clients that their sockets have not taken yet; bounded by "
                        + "back-pressure").strongReference(true).register(registry);
    }

    /** Returns the client connections open now. */
    public int clientConnections() {
        return clients.size();
    }

    /** Returns how many requests wait in the gateway queue now. */
    public int queueDepth() {
        return queue.depth();
    }

    /** Returns each model's queue with requests waiting now (see {@link GatewayQueue#byModel}). */
    public Map<String, ModelWait> queueByModel() {
        return queue.byModel();
    }

    /** Returns the port the proxy listens on. */
    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /**
     * Stops accepting connections and lets requests in flight, streams included, finish up to
     * {@code timeout}: idle keep-alive connections are closed at once, busy ones after their current
     * response. Returns whether every client connection was gone within the timeout.
     */
    public boolean drain(Duration timeout) {
        draining.begin();
        serverChannel.close().syncUninterruptibly();
        for (Channel ch : clients) {
            ch.eventLoop().execute(() -> {
                ClientConnection conn = ch.pipeline().get(ClientConnection.class);
                if (conn != null) {
                    conn.drain();
                }
            });
        }
        // The connections open now; any accepted later is closed at once (initChannel).
        boolean clean = clients.newCloseFuture().awaitUninterruptibly(timeout.toMillis()) && clients.isEmpty();
        if (!clean) {
            log.warn("Drain timeout of {} ms passed with {} client connections still open; closing them",
                    timeout.toMillis(), clients.size());
        }
        return clean;
    }

    /** Closes every connection and stops the event loops. */
    @Override
    public void close() {
        draining.begin();
        serverChannel.close().syncUninterruptibly();
        clients.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        // Every channel is closed before the loops stop: a loop that stops with a channel still
        // closing rejects the channel's last task (io_uring closes asynchronously).
        upstreams.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
        resolver.close();
        tracing.close(); // after the loops: every request's spans have ended
    }
}
