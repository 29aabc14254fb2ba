package io.heartgate.agent;

import io.heartgate.agent.gpu.GpuSampler;
import io.heartgate.agent.probe.Backend;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.LogFormat;
import io.heartgate.protocol.cli.Cli;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.producer.ProducerConfig;
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
            description = "Kafka to publish to [env KAFKA_BOOTSTRAP_SERVERS] (default: required (not with "
                    + "`--once`))")
    String kafka;

    @Option(names = "--kafka-config", defaultValue = "${env:KAFKA_CONFIG_FILE}", paramLabel = "FILE",
            description = {"Kafka client properties (TLS, SASL, tuning) for the producer; see [Kafka client "
                    + "properties](#kafka-client-properties) [env KAFKA_CONFIG_FILE] (default: none)",
                "Accepted: a Java properties file"})
    Path kafkaConfig;

    @Option(names = "--heartbeat-keys", defaultValue = "${env:HEARTBEAT_KEYS_FILE}", paramLabel = "FILE",
            description = {"sign every record, tombstones included, with the first key of the file [env "
                    + "HEARTBEAT_KEYS_FILE] (default: none: unsigned)",
                "Accepted: [heartbeat keys file](#heartbeat-keys-file)"})
    Path heartbeatKeys;

    @Option(names = "--topic", paramLabel = "NAME", defaultValue = "${env:HEARTBEAT_TOPIC:-gpu-heartbeats}",
            description = {"heartbeat topic [env HEARTBEAT_TOPIC] (default: gpu-heartbeats)",
                "Accepted: 1 to 249 of `A-Za-z0-9._-`"})
    String topic;

    @Option(names = "--node-id", paramLabel = "ID", defaultValue = "${env:NODE_ID}",
            description = {"unique per inference server [env NODE_ID] (default: the host name up to its "
                    + "first dot)",
                "Accepted: 1 to 128 of `A-Za-z0-9._:-`"})
    String nodeId;

    @Option(names = "--url", paramLabel = "URL", defaultValue = "${env:NODE_URL}",
            description = {"the server's base URL as the scheduler must reach it [env NODE_URL] (default: "
                    + "required)",
                "Accepted: absolute `http`/`https` with a host, at most 2048 characters"})
    String url;

    @Option(names = "--probe-url", paramLabel = "URL", defaultValue = "${env:NODE_PROBE_URL}",
            description = {"where the agent itself reaches the server [env NODE_PROBE_URL] (default: "
                    + "`--url`)",
                "Accepted: as `--url`"})
    String probeUrl;

    @Option(names = "--backend", paramLabel = "B", defaultValue = "${env:NODE_BACKEND:-auto}",
            description = {"how health, models and load are read [env NODE_BACKEND] (default: auto)",
                "Accepted: `auto`, `ollama`, `openai`, `vllm`, `tgi`, `llamacpp`"})
    String backend;

    @Option(names = "--weight", paramLabel = "N", defaultValue = "${env:NODE_WEIGHT:-1}",
            description = {"relative capacity [env NODE_WEIGHT] (default: 1)",
                "Accepted: 1 to 1000"})
    int weight;

    @Option(names = "--capacity", paramLabel = "N", defaultValue = "${env:NODE_CAPACITY:-0}",
            description = {"requests the server generates at once, sent as the heartbeat's `capacity`; wins "
                    + "over TGI's `max_batch_size` or `max_concurrent_requests` and llama.cpp's slot count "
                    + "(`/slots`, else `/props` `total_slots`); the only source for vLLM (`--max-num-seqs`) and "
                    + "Ollama (`OLLAMA_NUM_PARALLEL`) [env NODE_CAPACITY] (default: `0` (what the server says))",
                "Accepted: 0 to 100000"})
    int capacity;

    @Option(names = "--prefill-tps", paramLabel = "N", defaultValue = "${env:NODE_PREFILL_TPS}",
            description = {"prompt tokens the server prefills per second, sent in every heartbeat as `load.prefillTps`; "
                    + "wins over what llama.cpp's metrics measure; the only source for vLLM, TGI, Ollama and other "
                    + "servers [env NODE_PREFILL_TPS] (default: measured from llama.cpp's `/metrics`, else none)",
                "Accepted: a number above 0, at most 10000000"})
    Double prefillTps;

    @Option(names = "--models", paramLabel = "a,b", defaultValue = "${env:NODE_MODELS}", split = ",",
            description = {"advertise these instead of the probed models [env NODE_MODELS] (default: probed)",
                "Accepted: 1 to 1024 names of 1 to 256 characters"})
    List<String> models;

    @Option(names = "--interval", paramLabel = "D", defaultValue = "${env:HEARTBEAT_INTERVAL:-1s}",
            description = {"heartbeat interval [env HEARTBEAT_INTERVAL] (default: 1s)",
                "Accepted: `100ms` to `60s`"})
    Duration interval;

    @Option(names = "--probe-timeout", paramLabel = "D", defaultValue = "${env:AGENT_PROBE_TIMEOUT:-2s}",
            description = {"timeout of each probe request; the one in force is at most `--interval` [env "
                    + "AGENT_PROBE_TIMEOUT] (default: 2s)",
                "Accepted: `10ms` to `60s`"})
    Duration probeTimeout;

    @Option(names = "--gpu-interval", paramLabel = "D", defaultValue = "${env:AGENT_GPU_INTERVAL:-5s}",
            description = {"how often `nvidia-smi` runs [env AGENT_GPU_INTERVAL] (default: 5s)",
                "Accepted: `100ms` to `10m`"})
    Duration gpuInterval;

    @Option(names = "--nvidia-smi", paramLabel = "PATH", defaultValue = "${env:AGENT_NVIDIA_SMI:-nvidia-smi}",
            description = "the nvidia-smi executable [env AGENT_NVIDIA_SMI] (default: nvidia-smi)")
    String nvidiaSmi;

    @Option(names = "--drain", defaultValue = "${env:AGENT_DRAIN:-false}",
            description = "start in `DRAINING` state (SIGUSR2 does the same at run time) [env AGENT_DRAIN] "
                    + "(default: off)")
    boolean drain;

    @Option(names = "--metrics-port", paramLabel = "N", defaultValue = "${env:AGENT_METRICS_PORT:--1}",
            description = {"serve the agent's own `/metrics` on `0.0.0.0:N`; 0 = any free port [env "
                    + "AGENT_METRICS_PORT] (default: `-1` (off))",
                "Accepted: -1, or 0 to 65535"})
    int metricsPort;

    @Option(names = "--once", description = "probe once, print the heartbeat it would send as indented JSON on stdout, exit; "
                    + "no Kafka needed (default: off)")
    boolean once;

    @Option(names = "--log-format", paramLabel = "F", defaultValue = "${env:AGENT_LOG_FORMAT:-text}",
            description = {"`json`: one JSON object per line [env AGENT_LOG_FORMAT] (default: text)",
                "Accepted: `text`, `json`"})
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
                probeTimeout, gpuInterval, nvidiaSmi, drain, once, kafkaClient, signing, capacity == 0 ? null : capacity,
                prefillTps);
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
            Agent agent = new Agent(config, AgentRuntime.prober(config, clock), gpus, null, clock);
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
