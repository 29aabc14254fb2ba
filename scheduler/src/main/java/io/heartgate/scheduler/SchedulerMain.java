package io.heartgate.scheduler;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.LogFormat;
import io.heartgate.protocol.cli.Cli;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.scheduler.demo.Demo;
import io.heartgate.scheduler.proxy.ProxyConfig;
import io.heartgate.scheduler.proxy.Transport;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.scheduler.trust.KafkaUsers;
import io.heartgate.scheduler.trust.Reloading;
import io.heartgate.scheduler.trust.SecretFile;
import io.heartgate.scheduler.trust.ServerTls;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import io.heartgate.scheduler.trust.UpstreamKey;
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
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/** Runs a scheduler replica from the command line. Every flag has an environment variable; flags win. */
@Command(name = "scheduler", mixinStandardHelpOptions = true, version = "scheduler 0.1.0", sortOptions = false,
        usageHelpAutoWidth = true, subcommands = KeysCommand.class,
        description = {"Reads GPU node heartbeats from Kafka and routes inference requests to live nodes.",
            "Every flag can also be set by the environment variable shown; flags win."})
public final class SchedulerMain implements Callable<Integer> {


    @Option(names = "--kafka", defaultValue = "${env:KAFKA_BOOTSTRAP_SERVERS}", paramLabel = "HOST:PORT[,...]",
            description = "Kafka to read heartbeats from [env KAFKA_BOOTSTRAP_SERVERS] (default: start an embedded broker)")
    String kafka;

    @Option(names = "--kafka-config", defaultValue = "${env:KAFKA_CONFIG_FILE}", paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, ssl.*, sasl.*), passed to the clients as they "
                    + "are; KAFKA_* variables override single ones (KAFKA_SASL_MECHANISM sets sasl.mechanism) "
                    + "[env KAFKA_CONFIG_FILE] (default: none)")
    Path kafkaConfig;

    @Option(names = "--heartbeat-keys", defaultValue = "${env:HEARTBEAT_KEYS_FILE}", paramLabel = "FILE",
            description = "accept only heartbeats signed with one of these keys: lines of KEY_ID SECRET [NODE_ID_GLOB] "
                    + "[env HEARTBEAT_KEYS_FILE] (default: unsigned heartbeats accepted)")
    Path heartbeatKeys;

    @Option(names = "--embedded-kafka-port", defaultValue = "${env:EMBEDDED_KAFKA_PORT:-9092}",
            description = "port of the embedded broker, 0 = any free port [env EMBEDDED_KAFKA_PORT] (default: 9092)")
    int embeddedKafkaPort;

    @Option(names = "--embedded-kafka-users", defaultValue = "${env:EMBEDDED_KAFKA_USERS_FILE}", paramLabel = "FILE",
            description = "the embedded broker speaks SASL_SSL only, with these SCRAM users (lines of NAME PASSWORD; "
                    + "the first is the scheduler's) and a self-signed certificate kept in --data-dir "
                    + "[env EMBEDDED_KAFKA_USERS_FILE] (default: plaintext)")
    Path embeddedKafkaUsers;

    @Option(names = "--embedded-kafka-host", defaultValue = "${env:EMBEDDED_KAFKA_HOST:-127.0.0.1}",
            description = "address the embedded broker advertises; set it to this host's address for remote agents "
                    + "[env EMBEDDED_KAFKA_HOST] (default: 127.0.0.1)")
    String embeddedKafkaHost;

    @Option(names = "--data-dir", defaultValue = "${env:SCHEDULER_DATA_DIR}",
            description = "where the embedded broker keeps its log [env SCHEDULER_DATA_DIR] (default: a temp dir)")
    Path dataDir;

    @Option(names = "--topic", defaultValue = "${env:HEARTBEAT_TOPIC:-gpu-heartbeats}",
            description = "heartbeat topic, created if missing [env HEARTBEAT_TOPIC] (default: gpu-heartbeats)")
    String topic;

    @Option(names = "--topic-partitions", defaultValue = "${env:HEARTBEAT_TOPIC_PARTITIONS:-3}",
            description = "partitions when the topic is created [env HEARTBEAT_TOPIC_PARTITIONS] (default: 3)")
    int topicPartitions;

    @Option(names = "--bind", defaultValue = "${env:SCHEDULER_BIND:-0.0.0.0}",
            description = "address for both HTTP ports [env SCHEDULER_BIND] (default: 0.0.0.0)")
    String bind;

    @Option(names = "--port", defaultValue = "${env:SCHEDULER_PORT:-8080}",
            description = "proxy port, 0 = any free port [env SCHEDULER_PORT] (default: 8080)")
    int port;

    @Option(names = "--max-body", defaultValue = "${env:SCHEDULER_MAX_BODY:-16MiB}", converter = SizeConverter.class,
            description = "largest request body; larger gets 413 [env SCHEDULER_MAX_BODY] (default: 16MiB)")
    long maxBody;

    @Option(names = "--connect-timeout", defaultValue = "${env:SCHEDULER_CONNECT_TIMEOUT:-2s}",
            description = "time to connect to a node [env SCHEDULER_CONNECT_TIMEOUT] (default: 2s)")
    Duration connectTimeout;

    @Option(names = "--first-byte-timeout", defaultValue = "${env:SCHEDULER_FIRST_BYTE_TIMEOUT:-5m}",
            description = "time for a node to start answering; long for LLM queues; then 504 "
                    + "[env SCHEDULER_FIRST_BYTE_TIMEOUT] (default: 5m)")
    Duration firstByteTimeout;

    @Option(names = "--stall-timeout", defaultValue = "${env:SCHEDULER_STALL_TIMEOUT:-30s}",
            description = "a node that answers nothing for this long while a request waits on it and another node "
                    + "serving that model answers is ejected as stalled and its waiting requests move; 0 = off "
                    + "[env SCHEDULER_STALL_TIMEOUT] (default: 30s)")
    Duration stallTimeout;

    @Option(names = "--idle-timeout", defaultValue = "${env:SCHEDULER_IDLE_TIMEOUT:-2m}",
            description = "longest pause between two chunks of a response [env SCHEDULER_IDLE_TIMEOUT] (default: 2m)")
    Duration idleTimeout;

    @Option(names = "--keepalive-timeout", defaultValue = "${env:SCHEDULER_KEEPALIVE_TIMEOUT:-75s}",
            description = "how long a client connection may sit idle between requests before it is closed "
                    + "[env SCHEDULER_KEEPALIVE_TIMEOUT] (default: 75s)")
    Duration keepAliveTimeout;

    @Option(names = "--header-timeout", defaultValue = "${env:SCHEDULER_HEADER_TIMEOUT:-10s}",
            description = "how long a client may take to send a request's head, from its first byte; then 408 "
                    + "and the connection closes [env SCHEDULER_HEADER_TIMEOUT] (default: 10s)")
    Duration headerTimeout;

    @Option(names = "--body-timeout", defaultValue = "${env:SCHEDULER_BODY_TIMEOUT:-60s}",
            description = "how long a client may take to send a request's body, from the end of its head; then 408 "
                    + "and the connection closes [env SCHEDULER_BODY_TIMEOUT] (default: 60s)")
    Duration bodyTimeout;

    @Option(names = "--max-connections", defaultValue = "${env:SCHEDULER_MAX_CONNECTIONS:-10000}",
            description = "client connections held at once; one more is closed on accept (keep the open-file "
                    + "limit above it plus the node connections) [env SCHEDULER_MAX_CONNECTIONS] (default: 10000)")
    int maxConnections;

    @Option(names = "--allow-model-management", defaultValue = "${env:SCHEDULER_ALLOW_MODEL_MANAGEMENT:-false}",
            description = "forward Ollama's model-management calls (pull, delete, create, copy, push) "
                    + "to the node their X-Heartgate-Node header names; off, they get 405 "
                    + "[env SCHEDULER_ALLOW_MODEL_MANAGEMENT] (default: false)")
    boolean allowModelManagement;

    @Option(names = "--drain-timeout", defaultValue = "${env:SCHEDULER_DRAIN_TIMEOUT:-30s}",
            description = "how long in-flight requests may finish on SIGTERM [env SCHEDULER_DRAIN_TIMEOUT] (default: 30s)")
    Duration drainTimeout;

    @Option(names = "--eject-after", defaultValue = "${env:SCHEDULER_EJECT_AFTER:-3}",
            description = "consecutive connect failures that eject a node [env SCHEDULER_EJECT_AFTER] (default: 3)")
    int ejectAfter;

    @Option(names = "--eject-for", defaultValue = "${env:SCHEDULER_EJECT_FOR:-10s}",
            description = "first ejection; doubles per ejection in a row, up to 5m [env SCHEDULER_EJECT_FOR] (default: 10s)")
    Duration ejectFor;

    @Option(names = "--admin-port", defaultValue = "${env:SCHEDULER_ADMIN_PORT:-8081}",
            description = "admin/dashboard/metrics port, 0 = any free port [env SCHEDULER_ADMIN_PORT] (default: 8081)")
    int adminPort;

    @Mixin
    RoutingOptions routing;

    @Mixin
    OverloadOptions overload;

    @Option(names = "--missed-heartbeats", defaultValue = "${env:SCHEDULER_MISSED_HEARTBEATS:-3}",
            description = "a node expires after N of its own intervals without a heartbeat "
                    + "[env SCHEDULER_MISSED_HEARTBEATS] (default: 3)")
    int missedHeartbeats;

    @Option(names = "--retries", defaultValue = "${env:SCHEDULER_RETRIES:-2}",
            description = "other nodes tried when a node cannot be reached [env SCHEDULER_RETRIES] (default: 2)")
    int retries;

    @Option(names = "--demo", defaultValue = "${env:SCHEDULER_DEMO_NODES:-0}",
            description = "also start N simulated nodes with their agents [env SCHEDULER_DEMO_NODES] (default: 0)")
    int demo;

    @Option(names = "--look-back", defaultValue = "${env:SCHEDULER_LOOK_BACK:-3m}",
            description = "how far back heartbeats are read at start; at least the longest expiry "
                    + "[env SCHEDULER_LOOK_BACK] (default: 3m)")
    Duration lookBack;

    @Option(names = "--transport", defaultValue = "${env:SCHEDULER_TRANSPORT:-auto}",
            description = "the proxy's I/O: auto (io_uring, else epoll, else nio), io_uring, epoll or nio "
                    + "[env SCHEDULER_TRANSPORT] (default: auto)")
    String transport;

    @Option(names = "--allow-upstream", defaultValue = "${env:SCHEDULER_ALLOW_UPSTREAM}", paramLabel = "LIST",
            description = "the only addresses nodes may have: comma-separated CIDRs and host-name globs, such as "
                    + "10.0.0.0/8,*.gpu.internal; a heartbeat outside it is rejected, and a name is checked again "
                    + "after it resolves, before every connect [env SCHEDULER_ALLOW_UPSTREAM] (default: any, with a "
                    + "warning)")
    String allowUpstream;

    @Option(names = "--api-keys", defaultValue = "${env:SCHEDULER_API_KEYS}", paramLabel = "FILE",
            description = "callers need one of these keys: lines of NAME SHA256_HEX [models=MODEL,...], reloaded "
                    + "when the file changes; 'keys add NAME' makes one [env SCHEDULER_API_KEYS] (default: no key needed)")
    Path apiKeys;

    @Option(names = "--upstream-api-key", defaultValue = "${env:SCHEDULER_UPSTREAM_API_KEY_FILE}", paramLabel = "FILE",
            description = "the key the nodes require (vLLM --api-key, TGI, llama.cpp), sent to every node as "
                    + "Authorization: Bearer [env SCHEDULER_UPSTREAM_API_KEY_FILE] (default: none)")
    Path upstreamApiKey;

    @Option(names = "--admin-token", defaultValue = "${env:SCHEDULER_ADMIN_TOKEN_FILE}", paramLabel = "FILE",
            description = "/admin/*, the dashboard's data and its event stream need Authorization: Bearer TOKEN, "
                    + "the token being this file's content (16 characters or more) [env SCHEDULER_ADMIN_TOKEN_FILE] "
                    + "(default: open, with a warning when the admin port is not on loopback)")
    Path adminToken;

    @Option(names = "--admin-token-all", defaultValue = "${env:SCHEDULER_ADMIN_TOKEN_ALL:-false}",
            description = "put /healthz, /readyz and /metrics behind the admin token too [env SCHEDULER_ADMIN_TOKEN_ALL]")
    boolean adminTokenAll;

    @Option(names = "--tls-cert", defaultValue = "${env:SCHEDULER_TLS_CERT}", paramLabel = "FILE",
            description = "serve HTTPS (HTTP/1.1, ALPN) on the proxy and admin ports with this PEM certificate chain, "
                    + "reloaded when it changes [env SCHEDULER_TLS_CERT] (default: plain HTTP)")
    Path tlsCert;

    @Option(names = "--tls-key", defaultValue = "${env:SCHEDULER_TLS_KEY}", paramLabel = "FILE",
            description = "the PKCS#8 PEM private key of --tls-cert [env SCHEDULER_TLS_KEY]")
    Path tlsKey;

    @Option(names = "--log-format", defaultValue = "${env:SCHEDULER_LOG_FORMAT:-text}",
            description = "text or json (one JSON object per line, for log shippers) [env SCHEDULER_LOG_FORMAT] "
                    + "(default: text)")
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
        ProxyConfig proxy = new ProxyConfig(bind, port, maxBody, retries, connectTimeout, firstByteTimeout, idleTimeout,
                drainTimeout, ejectAfter, ejectFor, Math.max(1, Runtime.getRuntime().availableProcessors()),
                Transport.parse(transport), keepAliveTimeout, UpstreamAllowList.parse(allowUpstream), headerTimeout,
                bodyTimeout, maxConnections, allowModelManagement, stallTimeout, overload.maxQueue, overload.queueTimeout,
                overload.forceUsage, overload.reserveSlots);
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
                security, routing.resilience(), routing.warmFirst(), routing.affinity());
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
            printDemo(demo, config, scheduler);
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
            try (java.net.ServerSocket s = new java.net.ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new java.net.InetSocketAddress(p[1], port));
            } catch (java.io.IOException e) {
                return p[0] + " " + port + ": " + p[1] + ":" + port + " is already in use (" + e.getMessage()
                        + "); stop what uses it or pick another port";
            }
        }
        return null;
    }

    private static void printDemo(Demo demo, SchedulerConfig config, Scheduler scheduler) {
        String host = "0.0.0.0".equals(config.bind()) ? "localhost" : config.bind();
        String proxy = "http://" + host + ":" + scheduler.proxyPort();
        String admin = "http://" + host + ":" + scheduler.adminPort();
        StringBuilder sb = new StringBuilder();
        sb.append("\nHeartgate demo: ").append(demo.nodes().size()).append(" simulated GPU nodes, each with its agent ")
                .append("publishing heartbeats through Kafka ").append(scheduler.kafkaBootstrap()).append('\n');
        for (Demo.DemoNode n : demo.nodes()) {
            sb.append(String.format("  %-11s weight %d, %3d ms/token, models %s%n", n.id(), n.weight(), n.tokenDelayMs(),
                    n.models()));
        }
        sb.append("\nStream tokens through the scheduler (strategy ").append(config.strategy().label()).append("):\n\n");
        sb.append("  curl -N ").append(proxy)
                .append(Endpoint.OLLAMA_GENERATE.path()).append(" -d '{\"model\": \"llama3:8b\", \"prompt\": \"Why is the sky blue?\"}'\n\n");
        sb.append("  curl -N ").append(proxy).append(Endpoint.OPENAI_CHAT.path())
                .append(" -H 'Content-Type: application/json' \\\n")
                .append("    -d '{\"model\": \"llama3:8b\", \"stream\": true, \"messages\": [{\"role\": \"user\", ")
                .append("\"content\": \"Hello\"}]}'\n\n");
        sb.append("The X-Upstream-Node header (curl -i) and the first token name the node that answered.\n");
        sb.append("Dashboard: ").append(admin).append("/   nodes: ").append(admin).append("/admin/nodes   ready: ")
                .append(admin).append("/readyz\n");
        sb.append("Press Ctrl-C to stop everything.\n");
        System.out.println(sb);
    }
}
