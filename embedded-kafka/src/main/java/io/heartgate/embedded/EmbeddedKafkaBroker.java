package io.heartgate.embedded;

import java.io.IOException;
import java.io.OutputStream;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a real single-node Kafka broker (KRaft, broker and controller in one node) in a child JVM
 * started from the classpath of this one; no Kafka installation needed.
 *
 * <p>It is what the scheduler starts when no {@code --kafka} is given, and what tests use when no
 * Docker engine is available. A child JVM rather than an in-process server because Kafka's
 * fatal-fault handler halts its JVM: a broker fault must not halt the scheduler. The child exits
 * when this JVM dies, however it dies (see {@link EmbeddedBrokerMain}). Thread-safe; {@link #close()}
 * is idempotent.
 *
 * <p>By default its client listener is PLAINTEXT. With {@link EmbeddedKafkaConfig.Security} it is
 * SASL_SSL only, with SCRAM and PLAIN users (and, for tests only, unsecured OAUTHBEARER), for a broker
 * that others on the network can reach;
 * {@link #clientProperties} and {@link #certificatePem()} tell a client how to log in. Passwords and
 * keys then sit in owner-only files in the data dir and never in the log.
 */
public final class EmbeddedKafkaBroker implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedKafkaBroker.class);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(15);

    private final EmbeddedKafkaConfig config;
    private final BrokerSecurity security;
    private final Path dataDir;
    private final boolean ownsDataDir;
    private final int port;
    private final Process process;
    private final ChildOutput output;
    private final Thread shutdownHook;
    private volatile boolean closed;

    private EmbeddedKafkaBroker(EmbeddedKafkaConfig config, BrokerSecurity security, Path dataDir,
                                boolean ownsDataDir, int port, Process process) {
        this.config = config;
        this.security = security;
        this.dataDir = dataDir;
        this.ownsDataDir = ownsDataDir;
        this.port = port;
        this.process = process;
        this.output = ChildOutput.follow(process.getInputStream(), port);
        // Whoever forgets to close us, a normal JVM exit still stops the child and removes its dir.
        this.shutdownHook = new Thread(this::close, "embedded-kafka-shutdown-" + port);
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /**
     * Starts a broker and waits until it answers a metadata request; a secured one also has every
     * configured SCRAM user by then.
     *
     * @throws IllegalStateException when it does not come up within the configured timeout, or when a
     *     secured broker is asked to start on a data dir formatted without security; the message
     *     carries the broker's last output lines and the child is stopped
     */
    public static EmbeddedKafkaBroker start(EmbeddedKafkaConfig config) {
        boolean ownsDataDir = config.dataDir() == null;
        Path dataDir;
        try {
            dataDir = ownsDataDir ? Files.createTempDirectory("heartgate-kafka-") : config.dataDir();
            Files.createDirectories(dataDir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the Kafka data dir", e);
        }
        // A free port found here can be taken by someone else before the child binds it; with a
        // port of our own choosing, try again with fresh ports.
        int attempts = config.port() == 0 ? 3 : 1;
        IllegalStateException last = null;
        for (int attempt = 1; attempt <= attempts; attempt++) {
            int port = config.port() == 0 ? freePort(config.listenHost()) : config.port();
            EmbeddedKafkaBroker broker;
            try {
                // Per attempt: closing a failed one removes a temp data dir, TLS material and all.
                BrokerSecurity security = config.security() == null ? null : BrokerSecurity.prepare(config,
                        dataDir, Files.exists(logDir(dataDir).resolve("meta.properties")));
                broker = launch(config, security, dataDir, ownsDataDir, port);
            } catch (RuntimeException e) {
                if (ownsDataDir) {
                    DataDirs.delete(dataDir);
                }
                throw e;
            }
            try {
                broker.awaitReady();
                return broker;
            } catch (IllegalStateException e) {
                last = e;
                broker.close();
                log.warn("Embedded Kafka did not start on port {} (attempt {} of {}): {}",
                        port, attempt, attempts, e.getMessage());
            }
        }
        if (ownsDataDir) {
            DataDirs.delete(dataDir);
        }
        throw last;
    }

    /** Returns the bootstrap address clients use, {@code HOST:PORT} with the advertised host. */
    public String bootstrapServers() {
        return config.advertisedHost() + ":" + port;
    }

    /**
     * Returns the certificate file that clients of a secured broker trust, the one given or the one made
     * in the data dir; empty for a PLAINTEXT broker.
     */
    public Optional<Path> certificatePem() {
        return security == null ? Optional.empty() : Optional.of(security.certificatePem());
    }

    /**
     * Returns the client settings that log in to this secured broker as {@code user} over SASL_SSL:
     * {@code security.protocol}, {@code sasl.mechanism}, {@code sasl.jaas.config} and the PEM
     * truststore of {@link #certificatePem()}. Without {@code bootstrap.servers}; see
     * {@link #bootstrapServers()}. Treat the result as secret: the JAAS entry holds the password.
     *
     * @param password the user's password; ignored for {@code OAUTHBEARER}, whose unsigned token
     *     simply names {@code user}
     * @param mechanism {@code SCRAM-SHA-256}, {@code SCRAM-SHA-512}, {@code PLAIN}, or {@code OAUTHBEARER}
     *     where the broker was started with {@link EmbeddedKafkaConfig.Security#unsecuredOauthForTests()}
     * @throws IllegalStateException for a PLAINTEXT broker
     * @throws IllegalArgumentException for a mechanism this broker does not offer
     */
    public Map<String, String> clientProperties(String user, String password, String mechanism) {
        if (security == null) {
            throw new IllegalStateException("this embedded broker serves PLAINTEXT; it has no SASL users");
        }
        return security.clientProperties(user, password, mechanism);
    }

    /** Returns the client port actually in use. */
    public int port() {
        return port;
    }

    /** Returns the directory holding the broker's log. */
    public Path dataDir() {
        return dataDir;
    }

    /** Returns the process id of the broker's JVM. */
    public long pid() {
        return process.pid();
    }

    /** Returns whether the broker's process is running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** Stops the broker (controlled shutdown, then kill) and removes its temp dir if it made one. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            // Already shutting down: we are probably running inside that hook.
        }
        stopProcess();
        if (ownsDataDir) {
            DataDirs.delete(dataDir);
        }
        log.info("Embedded Kafka on port {} stopped", port);
    }

    private static EmbeddedKafkaBroker launch(EmbeddedKafkaConfig config, BrokerSecurity security, Path dataDir,
                                              boolean ownsDataDir, int port) {
        int controllerPort = freePort("127.0.0.1");
        Path logDir = logDir(dataDir);
        Path propertiesFile = dataDir.resolve("server.properties");
        Path clusterIdFile = dataDir.resolve("cluster.id");
        try {
            Files.createDirectories(logDir);
            String clusterId;
            if (Files.exists(clusterIdFile)) {
                clusterId = Files.readString(clusterIdFile, StandardCharsets.UTF_8).trim();
            } else {
                clusterId = Uuid.randomUuid().toString();
                Files.writeString(clusterIdFile, clusterId, StandardCharsets.UTF_8);
            }
            Properties props = serverProperties(config, port, controllerPort, logDir, security);
            StringWriter text = new StringWriter();
            props.store(text, "written by Heartgate's embedded broker on each start");
            // A secured broker's settings hold its password and private key.
            OwnerOnlyFiles.write(propertiesFile, text.toString().getBytes(StandardCharsets.UTF_8));
            List<String> command = new ArrayList<>();
            command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            command.add("-Xmx" + config.maxHeapMiB() + "m");
            command.add("-XX:+UseSerialGC");
            command.add("-XX:+ExitOnOutOfMemoryError");
            command.add("-Djava.awt.headless=true");
            command.add("-Dlogback.configurationFile=heartgate-embedded-broker-logback.xml");
            command.add("-cp");
            command.add(System.getProperty("java.class.path"));
            command.add(EmbeddedBrokerMain.class.getName());
            command.add(propertiesFile.toString());
            command.add(clusterId);
            if (security != null) {
                command.add(dataDir.resolve(BrokerSecurity.BROKER_SECRET_FILE).toString());
            }
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            // The child inherits none of our JAVA_TOOL_OPTIONS-style agents by accident.
            pb.environment().remove("JAVA_TOOL_OPTIONS");
            Process process = pb.start();
            EmbeddedKafkaBroker broker = new EmbeddedKafkaBroker(config, security, dataDir, ownsDataDir, port,
                    process);
            log.debug("Embedded Kafka child pid {} starting on {}:{}", process.pid(), config.listenHost(), port);
            return broker;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the embedded Kafka broker", e);
        }
    }

    /**
     * Returns the broker's settings. The client listener is PLAINTEXT, or SASL_SSL when
     * {@code security} is given; it also carries the inter-broker traffic. The controller listener is
     * PLAINTEXT on loopback only: nobody but this node speaks to it.
     */
    static Properties serverProperties(EmbeddedKafkaConfig config, int port, int controllerPort, Path logDir,
                                       BrokerSecurity security) {
        String client = security == null ? "PLAINTEXT" : BrokerSecurity.LISTENER;
        Properties p = new Properties();
        p.putAll(Map.ofEntries(
                Map.entry("process.roles", "broker,controller"),
                Map.entry("node.id", "1"),
                Map.entry("controller.quorum.voters", "1@127.0.0.1:" + controllerPort),
                Map.entry("listeners", client + "://" + config.listenHost() + ":" + port
                        + ",CONTROLLER://127.0.0.1:" + controllerPort),
                Map.entry("advertised.listeners", client + "://" + config.advertisedHost() + ":" + port),
                Map.entry("controller.listener.names", "CONTROLLER"),
                Map.entry("inter.broker.listener.name", client),
                Map.entry("listener.security.protocol.map", client + ":" + client + ",CONTROLLER:PLAINTEXT"),
                Map.entry("log.dirs", logDir.toString()),
                // One node: every internal topic has one replica.
                Map.entry("offsets.topic.replication.factor", "1"),
                Map.entry("offsets.topic.num.partitions", "1"),
                Map.entry("transaction.state.log.replication.factor", "1"),
                Map.entry("transaction.state.log.min.isr", "1"),
                Map.entry("share.coordinator.state.topic.replication.factor", "1"),
                Map.entry("share.coordinator.state.topic.min.isr", "1"),
                Map.entry("group.initial.rebalance.delay.ms", "0"),
                Map.entry("num.partitions", "1"),
                Map.entry("auto.create.topics.enable", "true"),
                // The cleaner's dedupe buffer defaults to 128 MiB of heap; heartbeats need little.
                Map.entry("log.cleaner.dedupe.buffer.size", String.valueOf(4 * 1024 * 1024)),
                Map.entry("log.cleaner.threads", "1"),
                Map.entry("num.network.threads", "2"),
                Map.entry("num.io.threads", "2"),
                Map.entry("num.recovery.threads.per.data.dir", "1"),
                Map.entry("log.segment.bytes", String.valueOf(16 * 1024 * 1024)),
                Map.entry("log.retention.hours", "24")));
        if (security != null) {
            p.putAll(security.serverProperties());
        }
        return p;
    }

    private static Path logDir(Path dataDir) {
        return dataDir.resolve("kraft-logs");
    }

    private void awaitReady() {
        long deadline = System.nanoTime() + config.startTimeout().toNanos();
        String host = "0.0.0.0".equals(config.listenHost()) ? "127.0.0.1" : config.listenHost();
        // Wait for the listener with plain connects first: the admin client logs a warning for
        // every refused connection, which would fill the log with noise during a normal start.
        while (!accepts(host, port)) {
            if (!process.isAlive()) {
                throw new IllegalStateException("the broker process exited with status "
                        + process.exitValue() + "; last output:\n" + output.lastLines());
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Kafka did not listen on port " + port + " within "
                        + config.startTimeout().toSeconds() + " s; last output:\n" + output.lastLines());
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for Kafka", e);
            }
        }
        Properties props = new Properties();
        if (security != null) {
            props.putAll(security.adminProperties());
        }
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, host + ":" + port);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "2000");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        try (Admin admin = Admin.create(props)) {
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("the broker process exited with status "
                            + process.exitValue() + "; last output:\n" + output.lastLines());
                }
                try {
                    if (!admin.describeCluster().nodes().get(2, TimeUnit.SECONDS).isEmpty()) {
                        if (security != null) {
                            security.createUsers(admin, host + ":" + port, deadline);
                        }
                        return;
                    }
                } catch (ExecutionException | TimeoutException e) {
                    // Not up yet: the loop is bounded by the deadline and by the process being alive.
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for Kafka", e);
                }
            }
        }
        throw new IllegalStateException("Kafka did not answer within " + config.startTimeout().toSeconds()
                + " s; last output:\n" + output.lastLines());
    }

    private static boolean accepts(String host, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private void stopProcess() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                log.warn("Embedded Kafka on port {} did not stop within {} s; killing it", port,
                        STOP_TIMEOUT.toSeconds());
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try {
            OutputStream stdin = process.getOutputStream();
            stdin.close();
        } catch (IOException e) {
            log.debug("Closing the broker's stdin failed: {}", e.toString());
        }
    }

    private static int freePort(String host) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress("0.0.0.0".equals(host) ? "0.0.0.0" : host, 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find a free port on " + host, e);
        }
    }
}
