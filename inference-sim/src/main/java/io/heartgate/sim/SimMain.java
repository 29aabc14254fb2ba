package io.heartgate.sim;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.cli.Cli;
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

    @Option(names = "--name", paramLabel = "NAME", required = true, description = {"node name; the first token of every answer is `[NAME]` (default: required)",
                "Accepted: not blank"})
    String name;

    @Option(names = "--port", paramLabel = "N", defaultValue = "11434", description = {"port; 0 = any free port (default: `11434`)",
                "Accepted: 0 to 65535"})
    int port;

    @Option(names = "--bind", paramLabel = "ADDR", defaultValue = "127.0.0.1", description = "address to listen on (default: `127.0.0.1`)")
    String bind;

    @Option(names = "--models", paramLabel = "a,b", split = ",", defaultValue = "llama3:8b",
            description = {"models served; the first is used for OpenAI requests that name none (default: "
                    + "`llama3:8b`)",
                "Accepted: at least one, none blank"})
    List<String> models;

    @Option(names = "--tokens", paramLabel = "N", defaultValue = "32", description = {"tokens per answer, fewer when the request asks (`max_tokens`, "
                    + "`max_completion_tokens`, Ollama `options.num_predict`) (default: `32`)",
                "Accepted: 1 to 100000"})
    int tokens;

    @Option(names = "--token-delay", paramLabel = "D", defaultValue = "20ms",
            description = {"time per token (default: `20ms`)",
                "Accepted: 0 or more"})
    Duration tokenDelay;

    @Option(names = "--first-token-delay", paramLabel = "D", defaultValue = "100ms",
            description = {"time before the first token (default: `100ms`)",
                "Accepted: 0 or more"})
    Duration firstTokenDelay;

    @Option(names = "--max-concurrency", paramLabel = "N", defaultValue = "4",
            description = {"requests generated at once; the rest wait in a FIFO queue (default: `4`)",
                "Accepted: at least 1"})
    int maxConcurrency;

    @Option(names = "--max-queue", paramLabel = "N", defaultValue = "256",
            description = {"requests that may wait; beyond: 503 `server busy` (default: `256`)",
                "Accepted: 0 or more"})
    int maxQueue;

    @Option(names = "--embedding-dim", paramLabel = "N", defaultValue = "16", description = {"length of embedding vectors (default: `16`)",
                "Accepted: 1 to 8192"})
    int embeddingDim;

    @Option(names = "--max-loaded-models", paramLabel = "N", defaultValue = "0",
            description = {"models in memory at once, as `OLLAMA_MAX_LOADED_MODELS`; to load another the "
                    + "least recently used idle one is evicted (default: `0` (no limit))",
                "Accepted: 0 to 1000"})
    int maxLoadedModels;

    @Option(names = "--load-time", paramLabel = "D", defaultValue = "0s",
            description = {"time to load a model not in memory; with this or `--max-loaded-models` set the "
                    + "node starts with no model loaded (default: `0s`)",
                "Accepted: 0 to 1h"})
    Duration loadTime;

    @Option(names = "--kv-cache-blocks", paramLabel = "N", defaultValue = "0",
            description = {"prompt-prefix blocks kept (least recently used evicted); a block matches only "
                    + "when every block before it does (chained hashes, as vLLM) (default: `0`)",
                "Accepted: 0 (no cache) to 10000000"})
    int kvCacheBlocks;

    @Option(names = "--kv-block-chars", paramLabel = "N", defaultValue = "64",
            description = {"characters per block, standing in for tokens (default: `64`)",
                "Accepted: 1 to 65536"})
    int kvBlockChars;

    @Option(names = "--prefill-per-token", paramLabel = "D", defaultValue = "0ms",
            description = {"time each prompt token (4 characters) not found cached adds before the first "
                    + "token (default: `0ms`)",
                "Accepted: 0 to 1s"})
    Duration prefillPerToken;

    @Option(names = "--ollama-prefill", paramLabel = "BOOL", arity = "0..1", fallbackValue = "true",
            defaultValue = "true",
            description = {"an Ollama `/api/chat` whose last message is the assistant's continues that "
                    + "message, as a model whose template uses `$last` does; `--ollama-prefill=false` gives it a "
                    + "new answer instead, as a template that closes the turn (default: on)",
                "Accepted: `true`, `false`"})
    boolean ollamaPrefill;

    @Option(names = "--api-key", paramLabel = "KEY",
            description = "POST requests need `Authorization: Bearer KEY`, else 401 "
                    + "`{\"error\":\"Unauthorized\"}` as vLLM's `--api-key` answers; GET requests (listings, health) "
                    + "stay open so that agents without the key can probe (default: none)")
    String apiKey;

    @Option(names = "--fail-health", description = "fault: `/health` and `/api/version` answer 503 (default: off)")
    boolean failHealth;

    @Option(names = "--error-status", paramLabel = "N", defaultValue = "0",
            description = {"fault: inference requests answer this status at once (default: `0` (off))",
                "Accepted: 0, 429, 500, 502, 503"})
    int errorStatus;

    @Option(names = "--hang", description = "fault: inference requests never get a first byte (default: off)")
    boolean hang;

    @Option(names = "--drop-after", paramLabel = "K", defaultValue = "-1",
            description = {"fault: cut the connection after K tokens (default: `-1` (off))",
                "Accepted: -1 or more"})
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
                    new SimConfig.Prefill(kvCacheBlocks, kvBlockChars, prefillPerToken), ollamaPrefill);
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
