package io.heartgate.loadgen;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.cli.Cli;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Runs one open-loop load test from the command line and prints its table row; exit status 0 when
 * it ran (failed requests are results, not errors), 2 for a bad flag.
 */
@Command(name = "loadgen", mixinStandardHelpOptions = true, version = "loadgen 0.1.0",
        sortOptions = false, usageHelpAutoWidth = true,
        description = "An open-loop load generator for LLM chat APIs: Ollama NDJSON or OpenAI SSE streams.")
public final class LoadGenMain implements Callable<Integer> {

    /** Threads that read answers; the client never blocks on them, so a few carry thousands of streams. */
    private static final int HTTP_THREADS = 4;

    @Spec
    CommandSpec spec;

    @Option(names = "--url", paramLabel = "URL", required = true, description = {"base URL of the proxy or node (default: required)",
                "Accepted: http(s) URL"})
    String url;

    @Option(names = "--api", paramLabel = "A", defaultValue = "ollama", description = {"streaming `POST /api/chat` (NDJSON) or `POST /v1/chat/completions` (SSE) "
                    + "(default: `ollama`)",
                "Accepted: `ollama`, `openai`"})
    Api api;

    @Option(names = "--rate", paramLabel = "R", required = true, description = {"requests per second (conversations arrive at R / turns) (default: required)",
                "Accepted: > 0"})
    double rate;

    @Option(names = "--duration", paramLabel = "D", required = true, description = {"the window in which conversations start (default: required)",
                "Accepted: positive"})
    Duration duration;

    @Option(names = "--arrivals", paramLabel = "K", defaultValue = "poisson",
            description = {"exponential gaps, or exactly 1/rate apart (default: `poisson`)",
                "Accepted: `poisson`, `uniform`"})
    Arrivals arrivals;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "1", description = "seed of the gaps, the models drawn and the prompt words (default: `1`)")
    long seed;

    @Option(names = "--timeout", paramLabel = "D", defaultValue = "60s",
            description = {"per request, from its scheduled start; also how long the run waits after "
                    + "`--duration` (default: `60s`)",
                "Accepted: positive"})
    Duration timeout;

    @Option(names = "--max-in-flight", paramLabel = "N", defaultValue = "10000",
            description = {"requests under way at once; arrivals beyond it are dropped and counted (default: "
                    + "`10000`)",
                "Accepted: at least 1"})
    int maxInFlight;

    @Option(names = "--mix", paramLabel = "LIST", defaultValue = "llama3:8b",
            description = {"the models, drawn per conversation (default: `llama3:8b`)",
                "Accepted: `name=weight,...`, weights > 0"})
    String mix;

    @Option(names = "--turns", paramLabel = "N", defaultValue = "1",
            description = {"requests per conversation, each carrying the history (default: `1`)",
                "Accepted: at least 1"})
    int turns;

    @Option(names = "--think-time", paramLabel = "D", defaultValue = "0ms",
            description = {"pause between an answer and the next turn (default: `0ms`)",
                "Accepted: 0 or more"})
    Duration thinkTime;

    @Option(names = "--keys", paramLabel = "LIST", split = ",", description = "API keys, one per conversation in turn, as `Authorization: Bearer` (default: "
                    + "none)")
    List<String> keys = new ArrayList<>();

    @Option(names = "--keys-file", paramLabel = "F", description = "API keys, one per conversation in turn, as `Authorization: Bearer` (default: "
                    + "none)")
    Path keysFile;

    @Option(names = "--max-tokens", paramLabel = "N", defaultValue = "32", description = {"answer length asked for (default: `32`)",
                "Accepted: at least 1"})
    int maxTokens;

    @Option(names = "--min-tokens", paramLabel = "N", description = {"shortest answer asked for; each request draws its length evenly between the two "
                    + "(default: `--max-tokens`)",
                "Accepted: 1 to `--max-tokens`"})
    Integer minTokens;

    @Option(names = "--prompt-words", paramLabel = "N", defaultValue = "20", description = {"words per user message (default: `20`)",
                "Accepted: at least 1"})
    int promptWords;

    @Option(names = "--prompt-tokens", paramLabel = "N", defaultValue = "0", description = {"user messages of exactly 4N characters, N tokens as inference-sim counts them, "
                    + "instead of `--prompt-words`; 0: off (default: `0`)",
                "Accepted: 0 to 250000"})
    int promptTokens;

    @Option(names = "--system-prompts", paramLabel = "N", defaultValue = "0", description = {"distinct system prompts the conversations open with (conversation i takes prompt "
                    + "i mod N); 0: none (default: `0`)",
                "Accepted: 0 to 100000"})
    int systemPrompts;

    @Option(names = "--system-words", paramLabel = "N", defaultValue = "300", description = {"words per system prompt (default: `300`)",
                "Accepted: 0 to 1000000"})
    int systemWords;

    @Option(names = "--system-tokens", paramLabel = "N", defaultValue = "0", description = {"system prompts of exactly 4N characters, N tokens as inference-sim counts them, "
                    + "instead of `--system-words`; 0: off (default: `0`)",
                "Accepted: 0 to 250000"})
    int systemTokens;

    @Option(names = "--system-seed", paramLabel = "N", description = "seed of the system prompts' words, so that runs of different `--seed` share their "
                    + "system prompts (default: `--seed`)")
    Long systemSeed;

    @Option(names = "--session-header", paramLabel = "NAME", description = "a header naming the conversation (such as `X-Session-Id`), sent with every turn "
                    + "by `--session-share` of the conversations (default: none)")
    String sessionHeader;

    @Option(names = "--session-share", paramLabel = "F", defaultValue = "1", description = {"the fraction of conversations that send `--session-header`, spread evenly by "
                    + "index (default: `1`)",
                "Accepted: 0 to 1"})
    double sessionShare;

    @Option(names = "--label", paramLabel = "TEXT", description = "the result row's name (default: the API)")
    String label;

    @Option(names = "--out", paramLabel = "FILE", description = "write the results as JSON (default: none)")
    Path out;

    @Option(names = "--header", description = "print the column names before the row (default: off)")
    boolean header;

    /** Parses the command line, runs the load and exits with its status. */
    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    static CommandLine commandLine() {
        return Cli.commandLine("loadgen", new LoadGenMain()).setCaseInsensitiveEnumValuesAllowed(true);
    }

    @Override
    public Integer call() throws InterruptedException {
        PrintWriter err = spec.commandLine().getErr();
        LoadConfig config;
        try {
            config = config();
        } catch (InvalidSettingException e) {
            err.println("loadgen: " + Cli.flagError(e, Map.of()) + " (see --help)");
            err.flush();
            return 2;
        }
        Report report = run(config);
        PrintWriter stdout = spec.commandLine().getOut();
        if (header) {
            stdout.println(Report.HEADER);
        }
        stdout.println(report.row());
        stdout.flush();
        if (out != null) {
            try {
                report.write(out);
            } catch (IOException e) {
                err.println("loadgen: cannot write " + out + ": " + e.getMessage());
                err.flush();
                return 1;
            }
        }
        return 0;
    }

    private LoadConfig config() {
        URI uri;
        try {
            uri = new URI(url.strip());
        } catch (URISyntaxException e) {
            throw new InvalidSettingException("url", "must be a URL, was '" + url + "': " + e.getReason());
        }
        List<String> all = new ArrayList<>();
        keys.stream().map(String::strip).filter(k -> !k.isEmpty()).forEach(all::add);
        if (keysFile != null) {
            all.addAll(Keys.read(keysFile));
        }
        return new LoadConfig(uri, api, rate, duration, arrivals, seed, timeout, maxInFlight, Mix.parse(mix), turns,
                thinkTime, all, maxTokens, promptWords, label, minTokens == null ? maxTokens : minTokens,
                new Sessions(systemPrompts, systemWords, systemTokens, systemSeed, sessionHeader, sessionShare), promptTokens);
    }

    private static Report run(LoadConfig config) throws InterruptedException {
        AtomicInteger n = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(HTTP_THREADS, r -> {
            Thread t = new Thread(r, "loadgen-http-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        // HTTP/1.1: Ollama and vLLM speak nothing else in the clear, and an h2c upgrade attempt adds a round trip.
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(pool)
                .connectTimeout(config.timeout()).build();
        try (Clockwork clock = new SystemClockwork(System::nanoTime)) {
            Runner.Result result = new Runner(config, new HttpTransport(client), clock).run(Plan.of(config));
            return Report.of(config, result);
        } finally {
            pool.shutdownNow();
        }
    }
}
