package io.heartgate.scheduler;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.LogFormat;
import io.heartgate.protocol.cli.Cli;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.config.TracingConfig;
import io.heartgate.scheduler.demo.Demo;
import io.heartgate.scheduler.proxy.ProxyConfig;
import io.heartgate.scheduler.proxy.Transport;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.scheduler.trust.KafkaUsers;
import io.heartgate.scheduler.trust.Reloading;
import io.heartgate.scheduler.trust.SecretFile;
import io.heartgate.scheduler.trust.ServerTls;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import io.heartgate.scheduler.trust.UpstreamKey;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Runs a scheduler replica from the command line. Every flag has an environment variable; flags win. */
@Command(name = "scheduler", mixinStandardHelpOptions = true, version = "scheduler 0.1.0", sortOptions = false,
        usageHelpAutoWidth = true, subcommands = KeysCommand.class,
        description = {"Reads GPU node heartbeats from Kafka and routes inference requests to live nodes.",
            "Every flag can also be set by the environment variable shown; flags win."})
public final class SchedulerMain implements Callable<Integer> {


    @Option(names = "--kafka", defaultValue = "${env:KAFKA_BOOTSTRAP_SERVERS}", paramLabel = "HOST:PORT[,...]",
            description = {"Kafka to read heartbeats from; none: start the embedded broker [env "
                    + "KAFKA_BOOTSTRAP_SERVERS] (default: none)",
                "Accepted: blank = none"})
    String kafka;

    @Option(names = "--kafka-config", defaultValue = "${env:KAFKA_CONFIG_FILE}", paramLabel = "FILE",
            description = {"Kafka client properties (TLS, SASL, tuning) for the scheduler's consumer and "
                    + "admin client; see [Kafka client properties](#kafka-client-properties) [env "
                    + "KAFKA_CONFIG_FILE] (default: none)",
                "Accepted: a Java properties file"})
    Path kafkaConfig;

    @Option(names = "--heartbeat-keys", defaultValue = "${env:HEARTBEAT_KEYS_FILE}", paramLabel = "FILE",
            description = {"accept only records signed by one of these keys for their node id [env "
                    + "HEARTBEAT_KEYS_FILE] (default: none: unsigned heartbeats accepted)",
                "Accepted: [heartbeat keys file](#heartbeat-keys-file)"})
    Path heartbeatKeys;

    @Option(names = "--embedded-kafka-port", paramLabel = "N", defaultValue = "${env:EMBEDDED_KAFKA_PORT:-9092}",
            description = {"port of the embedded broker; 0 = any free port [env EMBEDDED_KAFKA_PORT] "
                    + "(default: 9092)",
                "Accepted: 0 to 65535"})
    int embeddedKafkaPort;

    @Option(names = "--embedded-kafka-users", defaultValue = "${env:EMBEDDED_KAFKA_USERS_FILE}", paramLabel = "FILE",
            description = {"the embedded broker speaks `SASL_SSL` only, with these SCRAM users; ignored with "
                    + "`--kafka` [env EMBEDDED_KAFKA_USERS_FILE] (default: none: the embedded broker is plaintext)",
                "Accepted: [users file](#embedded-broker-users-file)"})
    Path embeddedKafkaUsers;

    @Option(names = "--embedded-kafka-host", paramLabel = "H", defaultValue = "${env:EMBEDDED_KAFKA_HOST:-127.0.0.1}",
            description = "address the embedded broker advertises; other than `127.0.0.1`/`localhost`, it "
                    + "listens on all interfaces [env EMBEDDED_KAFKA_HOST] (default: 127.0.0.1)")
    String embeddedKafkaHost;

    @Option(names = "--data-dir", paramLabel = "DIR", defaultValue = "${env:SCHEDULER_DATA_DIR}",
            description = "where the embedded broker keeps its log (kept across restarts) [env "
                    + "SCHEDULER_DATA_DIR] (default: a temp dir, removed on exit)")
    Path dataDir;

    @Option(names = "--topic", paramLabel = "NAME", defaultValue = "${env:HEARTBEAT_TOPIC:-gpu-heartbeats}",
            description = {"heartbeat topic, created if missing [env HEARTBEAT_TOPIC] (default: "
                    + "gpu-heartbeats)",
                "Accepted: 1 to 249 of `A-Za-z0-9._-`"})
    String topic;

    @Option(names = "--events-topic", paramLabel = "NAME",
            defaultValue = "${env:SCHEDULER_EVENTS_TOPIC:-heartgate-gateway-events}",
            description = {"topic the replicas share usage, node health, sessions and their heartbeats through, "
                    + "created if missing [env SCHEDULER_EVENTS_TOPIC] (default: heartgate-gateway-events)",
                "Accepted: 1 to 249 of `A-Za-z0-9._-`, not the heartbeat topic"})
    String eventsTopic;

    @Option(names = "--otlp-endpoint", paramLabel = "URL", defaultValue = "${env:SCHEDULER_OTLP_ENDPOINT}",
            description = {"send a trace of every proxied request over OTLP/HTTP to URL (its `/v1/traces`): a "
                    + "server span per request, a span per attempt on a node, the W3C `traceparent` forwarded to "
                    + "the node; the standard `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_*` variables turn it on and "
                    + "tune it too [env SCHEDULER_OTLP_ENDPOINT] (default: none: off, unless the `OTEL_*` "
                    + "variables name an endpoint)",
                "Accepted: an `http://` or `https://` URL"})
    String otlpEndpoint;

    @Option(names = "--trace-sample-ratio", paramLabel = "R", defaultValue = "${env:SCHEDULER_TRACE_SAMPLE_RATIO}",
            description = {"the share of requests traced; a request whose caller's `traceparent` says sampled is "
                    + "always traced, one that says not sampled never is [env SCHEDULER_TRACE_SAMPLE_RATIO] "
                    + "(default: `OTEL_TRACES_SAMPLER`'s, else every request)",
                "Accepted: 0 to 1"})
    Double traceSampleRatio;

    @Option(names = "--topic-partitions", paramLabel = "N", defaultValue = "${env:HEARTBEAT_TOPIC_PARTITIONS:-3}",
            description = {"partitions when the scheduler creates the topic [env HEARTBEAT_TOPIC_PARTITIONS] "
                    + "(default: 3)",
                "Accepted: 1 to 1000"})
    int topicPartitions;

    @Option(names = "--bind", paramLabel = "ADDR", defaultValue = "${env:SCHEDULER_BIND:-0.0.0.0}",
            description = {"address of both HTTP ports [env SCHEDULER_BIND] (default: 0.0.0.0)",
                "Accepted: not blank"})
    String bind;

    @Option(names = "--port", paramLabel = "N", defaultValue = "${env:SCHEDULER_PORT:-8080}",
            description = {"proxy port; 0 = any free port [env SCHEDULER_PORT] (default: 8080)",
                "Accepted: 0 to 65535"})
    int port;

    @Mixin
    ProxyOptions limits;

    @Option(names = "--admin-port", paramLabel = "N", defaultValue = "${env:SCHEDULER_ADMIN_PORT:-8081}",
            description = {"admin, dashboard and metrics port; 0 = any free port [env SCHEDULER_ADMIN_PORT] "
                    + "(default: 8081)",
                "Accepted: 0 to 65535"})
    int adminPort;

    @Mixin
    RoutingOptions routing;

    @Mixin
    OverloadOptions overload;

    @Option(names = "--missed-heartbeats", paramLabel = "N", defaultValue = "${env:SCHEDULER_MISSED_HEARTBEATS:-3}",
            description = {"a node expires after N of its own intervals without a heartbeat [env "
                    + "SCHEDULER_MISSED_HEARTBEATS] (default: 3)",
                "Accepted: 1 to 100"})
    int missedHeartbeats;

    @Option(names = "--retries", paramLabel = "N", defaultValue = "${env:SCHEDULER_RETRIES:-2}",
            description = {"other nodes tried when a node cannot be reached or answers 503/429 [env "
                    + "SCHEDULER_RETRIES] (default: 2)",
                "Accepted: 0 to 10"})
    int retries;

    @Option(names = "--migrate-streams", paramLabel = "N", defaultValue = "${env:SCHEDULER_MIGRATE_STREAMS:-1}",
            description = {"how many times one streamed answer whose node fails mid-stream may move to another "
                    + "node, which goes on from the text already sent (docs/ROUTING.md); 0 cuts such streams [env "
                    + "SCHEDULER_MIGRATE_STREAMS] (default: 1)",
                "Accepted: 0 to 10"})
    int migrateStreams;

    @Option(names = "--demo", paramLabel = "N", defaultValue = "${env:SCHEDULER_DEMO_NODES:-0}",
            description = {"also start N simulated nodes, each with its agent publishing through Kafka [env "
                    + "SCHEDULER_DEMO_NODES] (default: 0)",
                "Accepted: 0 to 32"})
    int demo;

    @Option(names = "--look-back", paramLabel = "D", defaultValue = "${env:SCHEDULER_LOOK_BACK:-3m}",
            description = {"how far back heartbeats are read at start at most (less where the replicas' newest "
                    + "restart point allows); at least the longest expiry [env SCHEDULER_LOOK_BACK] (default: 3m)",
                "Accepted: positive"})
    Duration lookBack;

    @Option(names = "--transport", paramLabel = "T", defaultValue = "${env:SCHEDULER_TRANSPORT:-auto}",
            description = {"the proxy's I/O; `auto`: io_uring, else epoll, else NIO (io_uring is blocked by "
                    + "Docker's and containerd's default seccomp profiles); a transport the host lacks is a flag "
                    + "error [env SCHEDULER_TRANSPORT] (default: auto)",
                "Accepted: `auto`, `io_uring`, `epoll`, `nio`"})
    String transport;

    @Option(names = "--allow-upstream", defaultValue = "${env:SCHEDULER_ALLOW_UPSTREAM}", paramLabel = "LIST",
            description = {"the only addresses nodes may have. A heartbeat whose `url` names an address "
                    + "outside the CIDRs, or a host no glob matches, is rejected (`url_not_allowed`). A host name "
                    + "is resolved again before every connect and each address checked: inside a CIDR of the list, "
                    + "or, when the list has no CIDR (a start-up warning says so), not loopback, link-local "
                    + "(169.254.169.254 among them), another cloud's metadata address (100.100.100.200, "
                    + "168.63.129.16, fd00:ec2::254), NAT64 (64:ff9b::/96), 0.0.0.0/8 or multicast; else the "
                    + "connect fails as a refused one would [env SCHEDULER_ALLOW_UPSTREAM] (default: none: any "
                    + "address, with a start-up warning)",
                "Accepted: comma-separated CIDRs (`10.0.0.0/8`, `fd00::/8`), addresses, host-name "
                    + "globs (`*.gpu.internal`, `gpu-?.lan`; `*` stays within one label)"})
    String allowUpstream;

    @Option(names = "--api-keys", defaultValue = "${env:SCHEDULER_API_KEYS}", paramLabel = "FILE",
            description = {"proxy callers need one of these keys; reloaded when the file changes [env "
                    + "SCHEDULER_API_KEYS] (default: none: no key needed)",
                "Accepted: [API keys file](#api-keys-file)"})
    Path apiKeys;

    @Option(names = "--upstream-api-key", defaultValue = "${env:SCHEDULER_UPSTREAM_API_KEY_FILE}", paramLabel = "FILE",
            description = {"sent to every node as `Authorization: Bearer KEY`, replacing what the client "
                    + "sent [env SCHEDULER_UPSTREAM_API_KEY_FILE] (default: none)",
                "Accepted: a file holding one key"})
    Path upstreamApiKey;

    @Option(names = "--admin-token", defaultValue = "${env:SCHEDULER_ADMIN_TOKEN_FILE}", paramLabel = "FILE",
            description = {"`/admin/*` and the dashboard's event stream need `Authorization: Bearer TOKEN` "
                    + "[env SCHEDULER_ADMIN_TOKEN_FILE] (default: none: open, with a warning when `--bind` is not "
                    + "loopback)",
                "Accepted: a file holding one token of at least 16 printable ASCII characters"})
    Path adminToken;

    @Option(names = "--admin-token-all", defaultValue = "${env:SCHEDULER_ADMIN_TOKEN_ALL:-false}",
            description = {"`/healthz`, `/readyz` and `/metrics` need the token too [env "
                    + "SCHEDULER_ADMIN_TOKEN_ALL] (default: off)",
                "Accepted: needs `--admin-token`"})
    boolean adminTokenAll;

    @Option(names = "--tls-cert", defaultValue = "${env:SCHEDULER_TLS_CERT}", paramLabel = "FILE",
            description = {"serve HTTPS on the proxy and admin ports; reloaded when the file changes [env "
                    + "SCHEDULER_TLS_CERT] (default: none: plain HTTP)",
                "Accepted: PEM certificate chain, leaf first"})
    Path tlsCert;

    @Option(names = "--tls-key", defaultValue = "${env:SCHEDULER_TLS_KEY}", paramLabel = "FILE",
            description = {"the certificate's private key [env SCHEDULER_TLS_KEY] (default: none)",
                "Accepted: unencrypted PKCS#8 PEM (`BEGIN PRIVATE KEY`) matching the leaf; with "
                    + "`--tls-cert`"})
    Path tlsKey;

    @Option(names = "--log-format", paramLabel = "F", defaultValue = "${env:SCHEDULER_LOG_FORMAT:-text}",
            description = {"`json`: one JSON object per line [env SCHEDULER_LOG_FORMAT] (default: text)",
                "Accepted: `text`, `json`"})
    String logFormat;

    /** Parses the command line and runs until SIGTERM or SIGINT. */
    public static void main(String[] args) {
        LogFormat.select(args, "SCHEDULER_LOG_FORMAT");
        System.exit(commandLine().execute(args));
    }

    static CommandLine commandLine() {
        return Cli.commandLine("scheduler", new SchedulerMain());
    }

    /** The flags of the settings whose names do not spell their flag in kebab case. */
    private static final Map<String, String> FLAGS = Map.of(
            "maxBodyBytes", "--max-body",
            "keepAliveTimeout", "--keepalive-timeout",
            "demoNodes", "--demo",
            "proxyPort", "--port",
            "logFormat", "--log-format");

    /** Builds the validated configuration; throws {@link InvalidSettingException} naming the bad setting. */
    SchedulerConfig config() {
        ProxyConfig proxy = new ProxyConfig(bind, port, limits.maxBody, retries, limits.connectTimeout,
                limits.firstByteTimeout, limits.idleTimeout, limits.drainTimeout, limits.ejectAfter, limits.ejectFor,
                limits.eventLoops(Runtime.getRuntime().availableProcessors()), Transport.parse(transport),
                limits.keepAliveTimeout, UpstreamAllowList.parse(allowUpstream), limits.headerTimeout,
                limits.bodyTimeout, limits.maxConnections, limits.allowModelManagement, limits.stallTimeout,
                overload.maxQueue, overload.queueTimeout, overload.forceUsage, overload.reserveSlots,
                migrateStreams);
        proxy.transport().resolve(); // an explicit choice the host lacks: one line and exit 2
        // Files read here too, so that a bad one is one line and exit 2 before anything starts.
        if (apiKeys != null) {
            ApiKeys.load(apiKeys);
        }
        if (upstreamApiKey != null) {
            UpstreamKey.load(upstreamApiKey);
        }
        if (adminToken != null) {
            SecretFile.read(adminToken, "adminToken", Scheduler.ADMIN_TOKEN_MIN);
        }
        if (heartbeatKeys != null) {
            HeartbeatKeys.load(heartbeatKeys);
        }
        Set<String> clientNames = new HashSet<>(ConsumerConfig.configNames());
        clientNames.addAll(AdminClientConfig.configNames());
        KafkaSettings kafkaClient = KafkaSettings.load(kafkaConfig, System.getenv(), clientNames);
        SecurityConfig security = new SecurityConfig(apiKeys, upstreamApiKey, adminToken, adminTokenAll, heartbeatKeys,
                tlsCert, tlsKey, kafkaClient, embeddedKafkaUsers);
        if (embeddedKafkaUsers != null) {
            KafkaUsers.load(embeddedKafkaUsers);
        }
        if (tlsCert != null) {
            Reloading.load("TLS certificate", "tlsCert", List.of(tlsCert, tlsKey), ServerTls::parse);
        }
        return new SchedulerConfig(kafka, embeddedKafkaPort, embeddedKafkaHost, dataDir, topic, topicPartitions, bind,
                adminPort, routing.strategy(), missedHeartbeats, proxy, demo, lookBack,
                security, routing.resilience(), routing.warmFirst(), routing.affinity(), eventsTopic,
                new TracingConfig(otlpEndpoint, traceSampleRatio, System.getenv()));
    }

    @Override
    public Integer call() throws InterruptedException {
        SchedulerConfig config;
        try {
            LogFormat.check(logFormat);
            config = config();
        } catch (InvalidSettingException e) {
            System.err.println("scheduler: " + Cli.flagError(e, FLAGS) + " (see --help)");
            return 2;
        }
        String busy = busyPort(config);
        if (busy != null) {
            System.err.println("scheduler: " + busy);
            return 2;
        }
        CountDownLatch stop = new CountDownLatch(1);
        // Our own SIGTERM/SIGINT handler (not a shutdown hook) so that a drained stop exits 0, not 143.
        Cli.onTerminate(stop::countDown);
        Scheduler scheduler;
        try {
            scheduler = Scheduler.start(config, Clock.systemUTC());
        } catch (InvalidSettingException e) {
            System.err.println("scheduler: " + Cli.flagError(e, FLAGS));
            return 2;
        } catch (IllegalStateException e) {
            System.err.println("scheduler: could not start: " + e.getMessage());
            return 1;
        }
        Demo demo = null;
        if (config.demoNodes() > 0) {
            try {
                demo = Demo.start(config.demoNodes(), scheduler.kafkaBootstrap(), config.topic(), Clock.systemUTC(),
                        scheduler.kafkaClient(), config.security().heartbeatKeys() == null ? null
                                : HeartbeatKeys.load(config.security().heartbeatKeys()));
            } catch (IllegalStateException e) {
                System.err.println("scheduler: " + e.getMessage());
                scheduler.close();
                return 1;
            }
            String host = "0.0.0.0".equals(config.bind()) ? "localhost" : config.bind();
            demo.awaitRoutable(() -> scheduler.table().snapshot().routable().size());
            System.out.println(demo.banner("http://" + host + ":" + scheduler.proxyPort(),
                    "http://" + host + ":" + scheduler.adminPort(), scheduler.kafkaBootstrap(),
                    config.strategy().label()));
        }
        stop.await();
        Logger log = LoggerFactory.getLogger(SchedulerMain.class);
        log.info("Scheduler stopping");
        if (demo != null) {
            demo.close(); // agents first: their tombstones remove the demo nodes at once
        }
        scheduler.drain();
        scheduler.close();
        log.info("Scheduler stopped");
        return 0;
    }

    /** Returns why a configured port cannot be used, or {@code null} when all are free. */
    static String busyPort(SchedulerConfig config) {
        String[][] ports = {
            {"--port", config.bind(), String.valueOf(config.proxy().port())},
            {"--admin-port", config.bind(), String.valueOf(config.adminPort())},
            {"--embedded-kafka-port", config.kafka() == null ? "127.0.0.1" : null,
                String.valueOf(config.embeddedKafkaPort())}};
        for (String[] p : ports) {
            int port = Integer.parseInt(p[2]);
            if (p[1] == null || port == 0) {
                continue;
            }
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress(p[1], port));
            } catch (IOException e) {
                return p[0] + " " + port + ": " + p[1] + ":" + port + " is already in use (" + e.getMessage()
                        + "); stop what uses it or pick another port";
            }
        }
        return null;
    }
}
