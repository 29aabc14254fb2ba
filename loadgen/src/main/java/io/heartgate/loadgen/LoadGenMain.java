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

    @Option(names = "--url", required = true, description = "base URL of the proxy or node, e.g. http://127.0.0.1:8080")
    String url;

    @Option(names = "--api", defaultValue = "ollama", description = "ollama (/api/chat, NDJSON) or openai "
            + "(/v1/chat/completions, SSE) (default: ${DEFAULT-VALUE})")
    Api api;

    @Option(names = "--rate", required = true, description = "requests per second, > 0")
    double rate;

    @Option(names = "--duration", required = true, description = "window in which requests start, e.g. 60s")
    Duration duration;

    @Option(names = "--arrivals", defaultValue = "poisson",
            description = "poisson (exponential gaps) or uniform (exactly 1/rate apart) (default: ${DEFAULT-VALUE})")
    Arrivals arrivals;

    @Option(names = "--seed", defaultValue = "1", description = "seed of gaps, models and prompts (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--timeout", defaultValue = "60s",
            description = "per request, from its scheduled start; also the wait after --duration (default: ${DEFAULT-VALUE})")
    Duration timeout;

    @Option(names = "--max-in-flight", defaultValue = "10000",
            description = "requests under way at once; arrivals beyond are dropped (default: ${DEFAULT-VALUE})")
    int maxInFlight;

    @Option(names = "--mix", defaultValue = "llama3:8b",
            description = "models and weights, e.g. llama3:8b=70,mistral:7b=30 (default: ${DEFAULT-VALUE})")
    String mix;

    @Option(names = "--turns", defaultValue = "1",
            description = "requests per conversation, each carrying the history (default: ${DEFAULT-VALUE})")
    int turns;

    @Option(names = "--think-time", defaultValue = "0ms",
            description = "pause between an answer and the next turn (default: ${DEFAULT-VALUE})")
    Duration thinkTime;

    @Option(names = "--keys", split = ",", description = "API keys sent as Authorization: Bearer, round robin per conversation")
    List<String> keys = new ArrayList<>();

    @Option(names = "--keys-file", description = "file of API keys, one a line, # comments")
    Path keysFile;

    @Option(names = "--max-tokens", defaultValue = "32", description = "answer length asked for (default: ${DEFAULT-VALUE})")
    int maxTokens;

    @Option(names = "--min-tokens", description = "shortest answer asked for: each request asks for a length drawn "
            + "evenly from --min-tokens to --max-tokens, as real answers vary (default: --max-tokens, one length)")
    Integer minTokens;

    @Option(names = "--prompt-words", defaultValue = "20", description = "words per user message (default: ${DEFAULT-VALUE})")
    int promptWords;

    @Option(names = "--system-prompts", defaultValue = "0", description = "distinct system prompts the conversations "
            + "open with, conversation i taking prompt i mod N; 0 = none (default: ${DEFAULT-VALUE})")
    int systemPrompts;

    @Option(names = "--system-words", defaultValue = "300", description = "words per system prompt (default: ${DEFAULT-VALUE})")
    int systemWords;

    @Option(names = "--session-header", description = "a header naming the conversation (such as X-Session-Id), "
            + "sent by --session-share of them")
    String sessionHeader;

    @Option(names = "--session-share", defaultValue = "1", description = "fraction of conversations that send "
            + "--session-header, 0 to 1 (default: ${DEFAULT-VALUE})")
    double sessionShare;

    @Option(names = "--label", description = "name of the result row (default: the API)")
    String label;

    @Option(names = "--out", description = "write the results as JSON to this file")
    Path out;

    @Option(names = "--header", description = "print the column names before the row")
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
                new Sessions(systemPrompts, systemWords, sessionHeader, sessionShare));
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
