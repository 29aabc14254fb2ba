package io.heartgate.agent;

import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import java.nio.file.Path;
import org.apache.kafka.clients.producer.ProducerConfig;
import io.heartgate.agent.gpu.GpuSampler;
import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.LogFormat;
import io.heartgate.protocol.HeartbeatCodec;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import io.heartgate.protocol.cli.Cli;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs the heartbeat agent from the command line. Every flag has an environment variable; flags win.
 * SIGTERM and SIGINT publish a tombstone and exit 0; SIGUSR2 switches the node to DRAINING.
 */
@Command(name = "heartbeat-agent", mixinStandardHelpOptions = true, version = "heartbeat-agent 0.1.0",
        sortOptions = false, usageHelpAutoWidth = true,
        description = {"Probes the local inference server and publishes its heartbeats to Kafka.",
            "Every flag can also be set by the environment variable shown; flags win."})
public final class AgentMain implements Callable<Integer> {


    @Option(names = "--kafka", defaultValue = "${env:KAFKA_BOOTSTRAP_SERVERS}", paramLabel = "HOST:PORT[,...]",
            description = "Kafka to publish to [env KAFKA_BOOTSTRAP_SERVERS] (required)")
    String kafka;

    @Option(names = "--kafka-config", defaultValue = "${env:KAFKA_CONFIG_FILE}", paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, ssl.*, sasl.*), passed to the producer as "
                    + "they are; KAFKA_* variables override single ones (KAFKA_SASL_MECHANISM sets sasl.mechanism) "
                    + "[env KAFKA_CONFIG_FILE] (default: none)")
    Path kafkaConfig;

    @Option(names = "--heartbeat-keys", defaultValue = "${env:HEARTBEAT_KEYS_FILE}", paramLabel = "FILE",
            description = "sign every heartbeat with the first key of this file: lines of KEY_ID SECRET [NODE_ID_GLOB] "
                    + "[env HEARTBEAT_KEYS_FILE] (default: unsigned)")
    Path heartbeatKeys;

    @Option(names = "--topic", defaultValue = "${env:HEARTBEAT_TOPIC:-gpu-heartbeats}",
            description = "heartbeat topic [env HEARTBEAT_TOPIC] (default: gpu-heartbeats)")
    String topic;

    @Option(names = "--node-id", defaultValue = "${env:NODE_ID}",
            description = "unique id of this inference server [env NODE_ID] (default: host name)")
    String nodeId;

    @Option(names = "--url", defaultValue = "${env:NODE_URL}",
            description = "the server's base URL as the scheduler must reach it [env NODE_URL] (required)")
    String url;

    @Option(names = "--probe-url", defaultValue = "${env:NODE_PROBE_URL}",
            description = "where the agent reaches the server [env NODE_PROBE_URL] (default: --url)")
    String probeUrl;

    @Option(names = "--backend", defaultValue = "${env:NODE_BACKEND:-auto}",
            description = "auto, ollama, openai, vllm, tgi, llamacpp [env NODE_BACKEND] (default: auto)")
    String backend;

    @Option(names = "--weight", defaultValue = "${env:NODE_WEIGHT:-1}",
            description = "relative capacity, 1 to 1000 [env NODE_WEIGHT] (default: 1)")
    int weight;

    @Option(names = "--capacity", defaultValue = "${env:NODE_CAPACITY:-0}",
            description = "requests the server generates at once (vLLM --max-num-seqs, OLLAMA_NUM_PARALLEL); "
                    + "0 = what the server reports (TGI max_batch_size or max_concurrent_requests, llama.cpp slots), "
                    + "else unknown [env NODE_CAPACITY] (default: 0)")
    int capacity;

    @Option(names = "--models", defaultValue = "${env:NODE_MODELS}", split = ",",
            description = "advertise these models instead of the probed ones [env NODE_MODELS]")
    List<String> models;

    @Option(names = "--interval", defaultValue = "${env:HEARTBEAT_INTERVAL:-1s}",
            description = "heartbeat interval, 100ms to 60s [env HEARTBEAT_INTERVAL] (default: 1s)")
    Duration interval;

    @Option(names = "--probe-timeout", defaultValue = "${env:AGENT_PROBE_TIMEOUT:-2s}",
            description = "timeout of each probe request, capped at the interval [env AGENT_PROBE_TIMEOUT] (default: 2s)")
    Duration probeTimeout;

    @Option(names = "--gpu-interval", defaultValue = "${env:AGENT_GPU_INTERVAL:-5s}",
            description = "how often nvidia-smi runs [env AGENT_GPU_INTERVAL] (default: 5s)")
    Duration gpuInterval;

    @Option(names = "--nvidia-smi", defaultValue = "${env:AGENT_NVIDIA_SMI:-nvidia-smi}",
            description = "nvidia-smi executable [env AGENT_NVIDIA_SMI] (default: nvidia-smi)")
    String nvidiaSmi;

    @Option(names = "--drain", defaultValue = "${env:AGENT_DRAIN:-false}",
            description = "start in DRAINING state (also: send SIGUSR2) [env AGENT_DRAIN]")
    boolean drain;

    @Option(names = "--metrics-port", defaultValue = "${env:AGENT_METRICS_PORT:--1}",
            description = "serve the agent's own Prometheus metrics on this port; -1 = off, 0 = any free port "
                    + "[env AGENT_METRICS_PORT] (default: off)")
    int metricsPort;

    @Option(names = "--once", description = "probe once, print the heartbeat it would send as JSON, and exit")
    boolean once;

    @Option(names = "--log-format", defaultValue = "${env:AGENT_LOG_FORMAT:-text}",
            description = "text or json (one JSON object per line) [env AGENT_LOG_FORMAT] (default: text)")
    String logFormat;

    /** Parses the command line and runs until SIGTERM or SIGINT. */
    public static void main(String[] args) {
        LogFormat.select(args, "AGENT_LOG_FORMAT");
        System.exit(commandLine().execute(args));
    }

    static CommandLine commandLine() {
        return Cli.commandLine("heartbeat-agent", new AgentMain());
    }

    /** The environment variables that stand in for required flags, named when one is missing. */
    private static final Map<String, String> REQUIRED_ENV = Map.of("kafka", "KAFKA_BOOTSTRAP_SERVERS", "url", "NODE_URL");

    /** Returns the one line for a bad setting: {@code --flag: why}. */
    static String flagError(InvalidSettingException e) {
        String line = Cli.flagError(e, Map.of("logFormat", "--log-format"));
        String env = REQUIRED_ENV.get(e.setting());
        return env != null && e.problem().equals("is required") ? line + " (or set " + env + ")" : line;
    }

    /** Builds the validated configuration; throws {@link InvalidSettingException} naming the bad setting. */
    AgentConfig config() {
        String id = nodeId != null ? nodeId : hostName();
        List<String> advertised = models == null || models.isEmpty() || (models.size() == 1 && models.get(0).isBlank())
                ? null : models.stream().map(String::trim).toList();
        KafkaSettings kafkaClient = KafkaSettings.load(kafkaConfig, System.getenv(), ProducerConfig.configNames());
        HeartbeatKeys signing = heartbeatKeys == null ? null : HeartbeatKeys.load(heartbeatKeys);
        return new AgentConfig(kafka, topic, id, url, probeUrl, Backend.parse(backend), weight, advertised, interval,
                probeTimeout, gpuInterval, nvidiaSmi, drain, once, kafkaClient, signing, capacity == 0 ? null : capacity);
    }

    @Override
    public Integer call() throws Exception {
        AgentConfig config;
        try {
            LogFormat.check(logFormat);
            config = config();
        } catch (InvalidSettingException e) {
            System.err.println("heartbeat-agent: " + flagError(e) + " (see --help)");
            return 2;
        }
        Clock clock = Clock.systemUTC();
        if (config.once()) {
            GpuSampler gpus = AgentRuntime.gpuSampler(config, clock);
            Agent agent = new Agent(config, AgentRuntime.prober(config), gpus, null, clock);
            gpus.refreshIfDue();
            agent.probeNow();
            System.out.println(new HeartbeatCodec().encodePretty(agent.compose()));
            return 0;
        }
        CountDownLatch stop = new CountDownLatch(1);
        Cli.onTerminate(stop::countDown);
        if (metricsPort < -1 || metricsPort > 65535) {
            System.err.println("heartbeat-agent: --metrics-port: must be -1 (off) or 0 to 65535, was " + metricsPort
                    + " (see --help)");
            return 2;
        }
        AgentRuntime runtime;
        try {
            runtime = AgentRuntime.start(config, clock, metricsPort);
        } catch (InvalidSettingException e) {
            System.err.println("heartbeat-agent: " + flagError(e) + " (see --help)");
            return 2;
        }
        Cli.onSignal("USR2", () -> runtime.agent().setDraining(true));
        stop.await();
        runtime.close();
        return 0;
    }

    private static String hostName() {
        try {
            String host = InetAddress.getLocalHost().getHostName();
            int dot = host.indexOf('.');
            return dot > 0 ? host.substring(0, dot) : host;
        } catch (UnknownHostException e) {
            String env = System.getenv("HOSTNAME");
            return env != null ? env : "unknown-host";
        }
    }
}
