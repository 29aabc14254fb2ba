package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.table.NodeTable;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the proxy port: an HTTP/1.1 relay on Netty's event loops (io_uring or epoll on Linux), each
 * loop with its own pool of keep-alive connections to the nodes, so a request and its upstream
 * connection never leave the loop that accepted the client. See {@link Exchange} for what happens
 * to one request.
 *
 * <p>Why Netty directly and not Vert.x's HTTP server and client (or {@code vertx-http-proxy}):
 * measured in bench/variants.sh on the same machine and load, the least a Vert.x 5 proxy can do
 * (bench/BareProxy.java) spent 28 to 34 us of CPU per request and reached 0.7 to 0.9 of nginx's
 * throughput, while the same relay on Netty's HTTP codec (bench/BareNettyProxy.java) spent 19 to
 * 21 us and matched nginx; the target is nginx's throughput. {@code vertx-http-proxy} also
 * picks the node before the body is read and replays nothing, while this proxy reads the
 * {@code model} from a bounded body buffer first and retries that body on another node. Netty's
 * codec still does all HTTP parsing and framing (no hand-written parser); what is written here is
 * the relay, the per-loop connection pool and the drain.
 */
public final class ProxyServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ProxyServer.class);

    /** State all event loops share; {@code nanoTicker} is the monotonic clock the timeouts use. */
    public record Shared(ProxyConfig config, NodeTable table, Balancer balancer, PassiveHealth health,
                         ProxyStats stats, ProxyMetrics metrics, LongSupplier nanoTicker,
                         Map<String, Target> targets, AtomicBoolean draining) {

        /** Creates the shared state for one proxy. */
        public static Shared of(ProxyConfig config, NodeTable table, Balancer balancer, PassiveHealth health,
                                ProxyStats stats, ProxyMetrics metrics, LongSupplier nanoTicker) {
            return new Shared(config, table, balancer, health, stats, metrics, nanoTicker, new ConcurrentHashMap<>(),
                    new AtomicBoolean());
        }

        /** Returns the parsed target of a node URL, parsing each URL once. */
        Target target(String url) {
            Target t = targets.get(url);
            if (t == null) {
                if (targets.size() > 100_000) {
                    targets.clear(); // URLs of nodes long gone; they are parsed again if they come back
                }
                t = Target.of(url);
                targets.put(url, t);
            }
            return t;
        }
    }

    private final Shared shared;
    private final EventLoopGroup group;
    private final DnsAddressResolverGroup resolver;
    private final ChannelGroup clients;
    private final ChannelGroup upstreams;
    private final Channel serverChannel;

    private ProxyServer(Shared shared, EventLoopGroup group, DnsAddressResolverGroup resolver, ChannelGroup clients,
                        ChannelGroup upstreams, Channel serverChannel) {
        this.shared = shared;
        this.clients = clients;
        this.upstreams = upstreams;
        this.group = group;
        this.resolver = resolver;
        this.serverChannel = serverChannel;
    }

    /**
     * Starts the proxy on {@code config.eventLoops()} event loops and returns once it listens.
     *
     * @throws IllegalStateException when the port cannot be bound
     */
    public static ProxyServer start(Shared shared) {
        SslContext tls;
        try {
            // https:// nodes: the JVM's trusted CAs, and the certificate must name the node's host.
            tls = SslContextBuilder.forClient().endpointIdentificationAlgorithm("HTTPS").build();
        } catch (SSLException e) {
            throw new IllegalStateException("cannot set up TLS for https nodes: " + e.getMessage(), e);
        }
        return start(shared, tls);
    }

    /** Starts the proxy with the given TLS client context for https nodes (tests give their own CA). */
    static ProxyServer start(Shared shared, SslContext tls) {
        ProxyConfig c = shared.config();
        Transport transport = c.transport().resolve();
        if (c.transport() != Transport.AUTO || transport == Transport.IO_URING) {
            log.info("Proxy transport: {}", transport.flagValue());
        } else {
            log.info("Proxy transport: {} ({})", transport.flagValue(), transport.whyNotFaster());
        }
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(c.eventLoops(),
                new DefaultThreadFactory("heartgate-proxy", false), transport.ioHandlerFactory());
        // Node names are resolved without blocking an event loop (hosts file first, then DNS).
        DnsAddressResolverGroup resolver = new DnsAddressResolverGroup(new DnsNameResolverBuilder()
                .datagramChannelType(transport.datagramChannel())
                .nameServerProvider(DnsServerAddressStreamProviders.platformDefault()));
        try {
            ChannelGroup upstreams = new DefaultChannelGroup("heartgate-proxy-upstreams", GlobalEventExecutor.INSTANCE);
            Map<EventLoop, LoopState> loops = new IdentityHashMap<>();
            group.forEach(executor -> {
                EventLoop loop = (EventLoop) executor;
                LoopState state = new LoopState(shared, loop, transport.socketChannel(), resolver, tls, upstreams);
                loops.put(loop, state);
                loop.scheduleAtFixedRate(state::sweep, 100, 100, TimeUnit.MILLISECONDS);
            });
            Map<EventLoop, LoopState> frozen = Map.copyOf(loops);
            ChannelGroup clients = new DefaultChannelGroup("heartgate-proxy-clients", GlobalEventExecutor.INSTANCE);
            Channel server = new ServerBootstrap()
                    .group(group)
                    .channel(transport.serverChannel())
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            LoopState state = frozen.get(ch.eventLoop());
                            ch.pipeline().addLast(
                                    new HttpServerCodec(8192, 64 * 1024, 64 * 1024),
                                    new RequestAggregator(shared),
                                    new ClientConnection(state));
                            clients.add(ch);
                            if (shared.draining().get()) {
                                ch.close(); // accepted just before the listening socket closed
                            }
                        }
                    })
                    .bind(new InetSocketAddress(c.bind(), c.port()))
                    .syncUninterruptibly()
                    .channel();
            ProxyServer proxy = new ProxyServer(shared, group, resolver, clients, upstreams, server);
            // The exact line scripts and tests wait for (CONTRACT.md).
            log.info("proxy listening on {}:{}", c.bind(), proxy.port());
            return proxy;
        } catch (RuntimeException e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            resolver.close();
            throw new IllegalStateException("proxy cannot listen on " + c.bind() + ":" + c.port() + ": " + e.getMessage(), e);
        }
    }

    /** Returns the port the proxy listens on. */
    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /** Returns the shared state (counters, health, config). */
    public Shared shared() {
        return shared;
    }

    /**
     * Stops accepting connections and lets requests in flight, streams included, finish up to
     * {@code timeout}: idle keep-alive connections are closed at once, busy ones after their current
     * response. Returns whether every client connection was gone within the timeout.
     */
    public boolean drain(Duration timeout) {
        shared.draining().set(true);
        serverChannel.close().syncUninterruptibly();
        for (Channel ch : clients) {
            ch.eventLoop().execute(() -> {
                ClientConnection conn = ch.pipeline().get(ClientConnection.class);
                if (conn != null) {
                    conn.drain();
                }
            });
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!clients.isEmpty() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        boolean clean = clients.isEmpty();
        if (!clean) {
            log.warn("Drain timeout of {} ms passed with {} client connections still open; closing them",
                    timeout.toMillis(), clients.size());
        }
        return clean;
    }

    /** Closes every connection and stops the event loops. */
    @Override
    public void close() {
        shared.draining().set(true);
        serverChannel.close().syncUninterruptibly();
        clients.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        // Every channel is closed before the loops stop: a loop that stops with a channel still
        // closing rejects the channel's last task (io_uring closes asynchronously).
        upstreams.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
        resolver.close();
    }
}
