package io.heartgate.loadgen;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.heartgate.sim.SimConfigBuilder;
import io.heartgate.sim.SimServer;
import io.vertx.core.Vertx;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import picocli.CommandLine;

/** Runs the generator's command line against in-process simulated nodes on free loopback ports. */
class LoadGenIT {

    private static final String MIX = "llama3:8b=70,mistral:7b=10,qwen2.5:7b=10,phi3:mini=10";
    private static final List<String> MODELS = List.of("llama3:8b", "mistral:7b", "qwen2.5:7b", "phi3:mini");
    private static final List<String> KEYS = List.of("sk-alpha-0001", "sk-beta-0002");
    private static final int TOKENS = 8;

    private static Vertx vertx;
    private static SimServer open;
    private static SimServer keyed;

    private final ObjectMapper json = new ObjectMapper();
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    @TempDir
    Path dir;

    @BeforeAll
    static void startNodes() throws Exception {
        vertx = Vertx.vertx();
        open = new SimServer(new SimConfigBuilder("sim-open", MODELS)
                .timing(TOKENS, Duration.ofMillis(2), Duration.ofMillis(5)).concurrency(64, 256).build(),
                Clock.systemUTC(), System::nanoTime);
        keyed = new SimServer(new SimConfigBuilder("sim-keyed", MODELS).apiKey("sk-right-0001")
                .timing(TOKENS, Duration.ofMillis(1), Duration.ofMillis(2)).build(), Clock.systemUTC(), System::nanoTime);
        vertx.deployVerticle(open).await(20, TimeUnit.SECONDS);
        vertx.deployVerticle(keyed).await(20, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stopNodes() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    private int execute(String... args) {
        CommandLine cmd = LoadGenMain.commandLine();
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        return cmd.execute(args);
    }

    @ParameterizedTest
    @EnumSource(Api.class)
    void runsTwoTurnConversationsOpenLoopAndMeasuresEveryAnswer(Api api) throws Exception {
        Path file = dir.resolve("results.json");
        String url = "http://127.0.0.1:" + open.port();

        int status = execute("--url", url, "--api", api.name().toLowerCase(), "--rate", "20", "--duration", "2s",
                "--turns", "2", "--keys", String.join(",", KEYS), "--mix", MIX, "--seed", "7", "--timeout", "10s",
                "--label", "it-" + api, "--out", file.toString(), "--header");

        assertThat(status).as(err.toString()).isZero();
        String[] lines = out.toString().strip().split("\n");
        assertThat(lines).hasSize(2);
        assertThat(lines[0].split("\\s+")).startsWith("label", "rate", "sent", "ok", "failed");
        JsonNode r = json.readTree(file.toFile());
        // The same configuration plans the same conversations, so the test knows what to expect.
        Plan plan = Plan.of(new LoadConfig(URI.create(url), api, 20, Duration.ofSeconds(2), Arrivals.POISSON, 7,
                Duration.ofSeconds(10), 10_000, Mix.parse(MIX), 2, Duration.ZERO, KEYS, 32, 20, null));
        long requests = plan.requests(2);
        assertThat(requests).isBetween(20L, 60L);
        JsonNode counts = r.path("counts");
        assertThat(counts.path("scheduled").asLong()).isEqualTo(requests);
        assertThat(counts.path("sent").asLong()).isEqualTo(requests);
        assertThat(counts.path("ok").asLong()).as(r.path("counts").toString()).isEqualTo(requests);
        assertThat(counts.path("failed").asLong()).isZero();
        assertThat(r.path("statuses").path("200").asLong()).isEqualTo(requests);
        assertThat(r.path("waitedOnLoad").asLong()).isZero();
        assertThat(lines[1].split("\\s+")).startsWith("it-" + api, "20", Long.toString(requests), Long.toString(requests), "0");

        List<JsonNode> samples = new ArrayList<>();
        r.path("requests").forEach(samples::add);
        assertThat(samples).hasSize((int) requests).allSatisfy(s -> {
            assertThat(s.path("kind").asText()).isEqualTo("ok");
            assertThat(s.path("ttftMs").asDouble()).isPositive().isLessThanOrEqualTo(s.path("totalMs").asDouble());
            assertThat(s.path("tokens").asInt()).isEqualTo(TOKENS);
        });
        assertThat(r.path("ttftMs").path("count").asLong()).isEqualTo(requests);
        assertThat(r.path("ttftMs").path("p50").asDouble()).isPositive()
                .isLessThanOrEqualTo(r.path("totalMs").path("p50").asDouble());

        // Per model: two requests for every conversation the plan gave the model; the mix favours llama3.
        Map<String, Long> planned = plan.conversations().stream()
                .collect(Collectors.groupingBy(Plan.Conversation::model, TreeMap::new, Collectors.counting()));
        planned.forEach((model, n) -> assertThat(r.path("models").path(model).path("count").asLong())
                .as(model).isEqualTo(2 * n));
        assertThat(planned.get("llama3:8b")).isGreaterThan(planned.entrySet().stream()
                .filter(e -> !e.getKey().equals("llama3:8b")).mapToLong(Map.Entry::getValue).max().orElse(0));
        // Per key: conversations take the keys in turn; only labels appear.
        long conversations = plan.conversations().size();
        assertThat(r.path("keys").path("sk-alp…").path("count").asLong()).isEqualTo(2 * ((conversations + 1) / 2));
        assertThat(r.path("keys").path("sk-bet…").path("count").asLong()).isEqualTo(2 * (conversations / 2));
        assertThat(file).content().doesNotContain("sk-alpha-0001", "sk-beta-0002");

        // Turn 2 carries turn 1 and its answer: a longer prompt, as the node counts it too (Ollama reports it).
        Map<Integer, List<JsonNode>> byConversation = samples.stream()
                .collect(Collectors.groupingBy(s -> s.path("conversation").asInt()));
        assertThat(byConversation).hasSize((int) conversations).allSatisfy((c, turns) -> {
            assertThat(turns).extracting(s -> s.path("turn").asInt()).containsExactlyInAnyOrder(1, 2);
            JsonNode first = turns.stream().filter(s -> s.path("turn").asInt() == 1).findFirst().orElseThrow();
            JsonNode second = turns.stream().filter(s -> s.path("turn").asInt() == 2).findFirst().orElseThrow();
            assertThat(second.path("promptChars").asInt()).isGreaterThan(first.path("promptChars").asInt());
            assertThat(second.path("scheduledMs").asDouble())
                    .isGreaterThanOrEqualTo(first.path("scheduledMs").asDouble() + first.path("totalMs").asDouble() - 1);
            if (api == Api.OLLAMA) {
                assertThat(second.path("promptTokens").asInt()).isGreaterThan(first.path("promptTokens").asInt() + 20);
            }
        });
    }

    @Test
    void sendsEachConversationsKeyAndBreaksResultsDownByKey() throws Exception {
        Path file = dir.resolve("keyed.json");

        int status = execute("--url", "http://127.0.0.1:" + keyed.port() + "/", "--rate", "10", "--duration", "1s",
                "--arrivals", "uniform", "--keys", "sk-right-0001,sk-wrong-0002", "--timeout", "10s",
                "--out", file.toString());

        assertThat(status).as(err.toString()).isZero();
        JsonNode r = json.readTree(file.toFile());
        assertThat(r.path("keys").path("sk-rig…").path("count").asLong()).isEqualTo(5);
        assertThat(r.path("keys").path("sk-rig…").path("ok").asLong()).isEqualTo(5);
        assertThat(r.path("keys").path("sk-wro…").path("count").asLong()).isEqualTo(5);
        assertThat(r.path("keys").path("sk-wro…").path("ok").asLong()).isZero();
        assertThat(r.path("counts").path("failedByKind").path("http_401").asLong()).isEqualTo(5);
        assertThat(r.path("statuses").path("401").asLong()).isEqualTo(5);
        assertThat(out.toString().strip()).startsWith("ollama ");
    }

    @Test
    void countsConnectionFailuresAsResultsAndAcceptsEnumValuesInAnyCase() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }

        int status = execute("--url", "http://127.0.0.1:" + closedPort, "--api", "OpenAI", "--arrivals", "Uniform",
                "--rate", "4", "--duration", "500ms", "--timeout", "5s", "--label", "nothing-there");

        assertThat(status).as(err.toString()).isZero();
        assertThat(out.toString().strip().split("\\s+"))
                .containsExactly("nothing-there", "4", "2", "0", "2", "-", "-", "-", "-", "0");
    }
}
