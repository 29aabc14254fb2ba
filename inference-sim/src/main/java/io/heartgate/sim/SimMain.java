package io.heartgate.sim;

import io.heartgate.protocol.InvalidSettingException;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import io.heartgate.protocol.cli.Cli;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Runs one simulated inference node from the command line. */
@Command(name = "inference-sim", mixinStandardHelpOptions = true, version = "inference-sim 0.1.0",
        sortOptions = false, usageHelpAutoWidth = true,
        description = "A simulated GPU inference node speaking the Ollama and OpenAI-compatible APIs.")
public final class SimMain implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(SimMain.class);

    @Option(names = "--name", required = true, description = "node name; every generated text names it")
    String name;

    @Option(names = "--port", defaultValue = "11434", description = "port, 0 = any free port (default: ${DEFAULT-VALUE})")
    int port;

    @Option(names = "--bind", defaultValue = "127.0.0.1", description = "address to listen on (default: ${DEFAULT-VALUE})")
    String bind;

    @Option(names = "--models", split = ",", defaultValue = "llama3:8b",
            description = "comma-separated models served (default: ${DEFAULT-VALUE})")
    List<String> models;

    @Option(names = "--tokens", defaultValue = "32", description = "tokens per answer (default: ${DEFAULT-VALUE})")
    int tokens;

    @Option(names = "--token-delay", defaultValue = "20ms",
            description = "time per token (default: ${DEFAULT-VALUE})")
    Duration tokenDelay;

    @Option(names = "--first-token-delay", defaultValue = "100ms",
            description = "time before the first token (default: ${DEFAULT-VALUE})")
    Duration firstTokenDelay;

    @Option(names = "--max-concurrency", defaultValue = "4",
            description = "requests generated at once; more wait in a queue (default: ${DEFAULT-VALUE})")
    int maxConcurrency;

    @Option(names = "--max-queue", defaultValue = "256",
            description = "requests that may wait; beyond: 503 server busy (default: ${DEFAULT-VALUE})")
    int maxQueue;

    @Option(names = "--embedding-dim", defaultValue = "16", description = "embedding length (default: ${DEFAULT-VALUE})")
    int embeddingDim;

    @Option(names = "--max-loaded-models", defaultValue = "0",
            description = "models held in memory at once, as OLLAMA_MAX_LOADED_MODELS; the least recently used "
                    + "idle one is evicted to load another; 0 = no limit (default: ${DEFAULT-VALUE})")
    int maxLoadedModels;

    @Option(names = "--load-time", defaultValue = "0s",
            description = "time to load a model not in memory; with a load time or a model limit the node "
                    + "starts with none loaded (default: ${DEFAULT-VALUE})")
    Duration loadTime;

    @Option(names = "--kv-cache-blocks", defaultValue = "0",
            description = "blocks of prompt prefix the node keeps cached (LRU, chained hashes as vLLM does); 0 = no "
                    + "cache (default: ${DEFAULT-VALUE})")
    int kvCacheBlocks;

    @Option(names = "--kv-block-chars", defaultValue = "64",
            description = "characters per cached block, as a stand-in for tokens (default: ${DEFAULT-VALUE})")
    int kvBlockChars;

    @Option(names = "--prefill-per-token", defaultValue = "0ms",
            description = "time each prompt token (4 characters) not found in the cache adds before the first token "
                    + "(default: ${DEFAULT-VALUE})")
    Duration prefillPerToken;

    @Option(names = "--api-key",
            description = "inference calls (POST) need Authorization: Bearer KEY, as with vLLM --api-key; "
                    + "listings and health stay open for agents (default: none)")
    String apiKey;

    @Option(names = "--fail-health", description = "fault: health checks answer 503")
    boolean failHealth;

    @Option(names = "--error-status", defaultValue = "0",
            description = "fault: answer inference requests with this status (429, 500, 502, 503)")
    int errorStatus;

    @Option(names = "--hang", description = "fault: never send a first byte")
    boolean hang;

    @Option(names = "--drop-after", defaultValue = "-1",
            description = "fault: cut the connection after K tokens (-1 = off)")
    int dropAfter;

    @Spec
    CommandSpec spec;

    /** Parses the command line and runs until the process is stopped. */
    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    static CommandLine commandLine() {
        return Cli.commandLine("inference-sim", new SimMain());
    }

    @Override
    public Integer call() throws InterruptedException {
        SimConfig config;
        try {
            Faults faults = new Faults(failHealth, errorStatus, hang, dropAfter, null, null);
            config = new SimConfig(name, bind, port, models, tokens, tokenDelay, firstTokenDelay, maxConcurrency,
                    maxQueue, embeddingDim, faults, apiKey, maxLoadedModels, loadTime,
                    new SimConfig.Prefill(kvCacheBlocks, kvBlockChars, prefillPerToken));
        } catch (InvalidSettingException e) {
            spec.commandLine().getErr().println("inference-sim: " + Cli.flagError(e, Map.of("bindHost", "--bind",
                    "dropAfterTokens", "--drop-after")) + " (see --help)");
            return 2;
        }
        Vertx vertx = Vertx.vertx();
        SimServer server = new SimServer(config, Clock.systemUTC(), System::nanoTime);
        CountDownLatch stopped = new CountDownLatch(1);
        try {
            vertx.deployVerticle(server).await(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            log.error("inference-sim could not listen on {}:{}: {}", bind, port, e.getMessage());
            vertx.close();
            return 1;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                vertx.close().await(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                log.warn("inference-sim did not close cleanly: {}", e.toString());
            }
            stopped.countDown();
        }, "inference-sim-shutdown"));
        stopped.await();
        return 0;
    }
}
