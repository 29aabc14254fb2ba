package io.heartgate.scheduler.config;

import io.heartgate.scheduler.proxy.ProxyConfig;
import io.heartgate.scheduler.proxy.Transport;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import java.time.Duration;

/** Builds proxy configurations for tests: the command line's defaults on loopback, any free port. */
public final class ProxyConfigBuilder {

    private String bind = "127.0.0.1";
    private int port;
    private long maxBodyBytes = 16L * 1024 * 1024;
    private int retries = 2;
    private Duration connectTimeout = Duration.ofSeconds(2);
    private Duration firstByteTimeout = Duration.ofMinutes(5);
    private Duration idleTimeout = Duration.ofMinutes(2);
    private Duration drainTimeout = Duration.ofSeconds(30);
    private int ejectAfter = 3;
    private Duration ejectFor = Duration.ofSeconds(10);
    private int eventLoops = Math.max(1, Runtime.getRuntime().availableProcessors());
    private Transport transport = Transport.AUTO;
    private Duration keepAliveTimeout = Duration.ofSeconds(75);
    private UpstreamAllowList allowUpstream = UpstreamAllowList.ALLOW_ALL;
    private Duration stallTimeout = Duration.ofSeconds(30);
    private Duration headerTimeout = Duration.ofSeconds(10);
    private Duration bodyTimeout = Duration.ofSeconds(60);
    private int maxConnections = 10_000;
    private boolean allowModelManagement;
    private int maxQueue = 1000;
    private boolean forceUsage;
    private int reserveSlots;
    private int migrateStreams = 1;
    private Duration queueTimeout = Duration.ofSeconds(60);

    public ProxyConfigBuilder allowModelManagement(boolean allow) {
        this.allowModelManagement = allow;
        return this;
    }

    public ProxyConfigBuilder headerTimeout(Duration d) {
        this.headerTimeout = d;
        return this;
    }

    public ProxyConfigBuilder bodyTimeout(Duration d) {
        this.bodyTimeout = d;
        return this;
    }

    public ProxyConfigBuilder maxConnections(int n) {
        this.maxConnections = n;
        return this;
    }

    public ProxyConfigBuilder eventLoops(int n) {
        this.eventLoops = n;
        return this;
    }

    public ProxyConfigBuilder stallTimeout(Duration d) {
        this.stallTimeout = d;
        return this;
    }

    public ProxyConfigBuilder allowUpstream(String list) {
        this.allowUpstream = UpstreamAllowList.parse(list);
        return this;
    }

    public ProxyConfigBuilder maxBodyBytes(long bytes) {
        this.maxBodyBytes = bytes;
        return this;
    }

    public ProxyConfigBuilder retries(int n) {
        this.retries = n;
        return this;
    }

    public ProxyConfigBuilder firstByteTimeout(Duration d) {
        this.firstByteTimeout = d;
        return this;
    }

    public ProxyConfigBuilder idleTimeout(Duration d) {
        this.idleTimeout = d;
        return this;
    }

    public ProxyConfigBuilder drainTimeout(Duration d) {
        this.drainTimeout = d;
        return this;
    }

    public ProxyConfigBuilder forceUsage(boolean force) {
        this.forceUsage = force;
        return this;
    }

    public ProxyConfigBuilder reserveSlots(int n) {
        this.reserveSlots = n;
        return this;
    }

    public ProxyConfigBuilder maxQueue(int n) {
        this.maxQueue = n;
        return this;
    }

    public ProxyConfigBuilder queueTimeout(Duration d) {
        this.queueTimeout = d;
        return this;
    }

    public ProxyConfigBuilder keepAliveTimeout(Duration d) {
        this.keepAliveTimeout = d;
        return this;
    }

    public ProxyConfigBuilder migrateStreams(int n) {
        this.migrateStreams = n;
        return this;
    }

    public ProxyConfigBuilder transport(Transport t) {
        this.transport = t;
        return this;
    }

    public ProxyConfig build() {
        return new ProxyConfig(bind, port, maxBodyBytes, retries, connectTimeout, firstByteTimeout, idleTimeout,
                drainTimeout, ejectAfter, ejectFor, eventLoops, transport, keepAliveTimeout, allowUpstream,
                headerTimeout, bodyTimeout, maxConnections, allowModelManagement, stallTimeout, maxQueue, queueTimeout,
                forceUsage, reserveSlots, migrateStreams);
    }
}
