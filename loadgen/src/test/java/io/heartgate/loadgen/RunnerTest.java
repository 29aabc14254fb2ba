package io.heartgate.loadgen;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class RunnerTest {

    private final ManualClockwork clock = new ManualClockwork();
    private final ObjectMapper json = new ObjectMapper();

    private static LoadConfig config(double rate, Duration duration, int turns, Duration think, int maxInFlight,
                                     Duration timeout, List<String> keys) {
        return new LoadConfig(URI.create("http://127.0.0.1:9/"), Api.OLLAMA, rate, duration, Arrivals.UNIFORM, 1,
                timeout, maxInFlight, Mix.parse("m1"), turns, think, keys, 16, 3, "t");
    }

    private static LoadConfig simple(double rate) {
        return config(rate, Duration.ofSeconds(1), 1, Duration.ZERO, 100, Duration.ofSeconds(5), List.of());
    }

    private Runner.Result run(LoadConfig c, ScriptedTransport t) throws InterruptedException {
        return new Runner(c, t, clock).run(Plan.of(c));
    }

    @Test
    void answerLengthsAreDrawnEvenlyBetweenTheBoundsAndRepeatable() {
        LoadConfig fixed = new LoadConfig(URI.create("http://127.0.0.1:9/"), Api.OPENAI, 1, Duration.ofSeconds(1),
                Arrivals.UNIFORM, 7, Duration.ofSeconds(1), 10, Mix.parse("m1"), 1, Duration.ZERO, List.of(), 40, 3, "t");
        assertThat(fixed.tokensFor(3, 0)).isEqualTo(40);
        LoadConfig varied = new LoadConfig(URI.create("http://127.0.0.1:9/"), Api.OPENAI, 1, Duration.ofSeconds(1),
                Arrivals.UNIFORM, 7, Duration.ofSeconds(1), 10, Mix.parse("m1"), 1, Duration.ZERO, List.of(), 40, 3, "t", 10);
        int[] counts = new int[41];
        for (int c = 0; c < 3100; c++) {
            int n = varied.tokensFor(c, 0);
            assertThat(n).isBetween(10, 40);
            assertThat(varied.tokensFor(c, 0)).as("repeatable").isEqualTo(n);
            counts[n]++;
        }
        for (int n = 10; n <= 40; n++) {
            assertThat(counts[n]).as("length " + n + " of 31, about 100 each").isBetween(60, 140);
        }
    }

    @Test
    void sendsOnScheduleAndMeasuresFromTheScheduledStart() throws InterruptedException {
        ScriptedTransport t = new ScriptedTransport(clock, r -> ScriptedTransport.ollama(100, 3, 300, 0));

        Runner.Result r = run(simple(10), t);

        assertThat(r.scheduled()).isEqualTo(10);
        assertThat(r.samples()).extracting(Sample::scheduledMs)
                .containsExactly(0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0);
        assertThat(r.samples()).allSatisfy(s -> {
            assertThat(s.outcome()).isEqualTo(Outcome.OK);
            assertThat(s.ttftMs()).isEqualTo(100.0);
            assertThat(s.totalMs()).isEqualTo(300.0);
            assertThat(s.tokens()).isEqualTo(3);
            assertThat(s.loadNanos()).isZero();
            assertThat(s.waitedOnLoad()).isFalse();
            assertThat(s.promptTokens()).isEqualTo(9);
            assertThat(s.key()).isNull();
        });
        assertThat(r.elapsedNanos()).isEqualTo(1_200_000_000L);
        assertThat(t.sent).allSatisfy(o -> {
            assertThat(o.uri()).isEqualTo(URI.create("http://127.0.0.1:9/api/chat"));
            assertThat(o.bearer()).isNull();
        });
    }

    @Test
    void conversationsOpenWithTheirSystemPromptAndHalfSendTheSessionHeader() throws InterruptedException {
        LoadConfig c = new LoadConfig(URI.create("http://127.0.0.1:9/"), Api.OLLAMA, 20, Duration.ofSeconds(1),
                Arrivals.UNIFORM, 1, Duration.ofSeconds(5), 100, Mix.parse("m1"), 2, Duration.ZERO, List.of(), 16, 3,
                "t", 16, new Sessions(3, 5, "X-Session-Id", 0.5));
        ScriptedTransport t = new ScriptedTransport(clock, r -> ScriptedTransport.ollama(100, 3, 300, 0));

        Runner.Result r = run(c, t);

        assertThat(t.sent).hasSize(20);
        // Conversation i sends it when (i x 0.618...) mod 1 < 0.5: 0, 2, 4, 5 and 7 of 0 to 9.
        assertThat(r.samples()).filteredOn(s -> s.session() != null).extracting(Sample::conversation)
                .containsOnly(0, 2, 4, 5, 7).hasSize(10);
        assertThat(r.samples()).filteredOn(s -> s.session() != null)
                .allSatisfy(s -> assertThat(s.session()).isEqualTo("conv-1-" + s.conversation()));
        Map<String, Integer> perSession = new HashMap<>();
        int without = 0;
        for (Transport.Outgoing o : t.sent) {
            JsonNode messages = read(o.body()).get("messages");
            assertThat(messages.get(0).get("role").asText()).isEqualTo("system");
            assertThat(messages.get(0).get("content").asText()).startsWith("You are assistant persona ");
            String session = o.headers().get("X-Session-Id");
            if (session == null) {
                without++;
            } else {
                perSession.merge(session, 1, Integer::sum);
            }
        }
        assertThat(perSession).hasSize(5).allSatisfy((k, n) -> assertThat(n).as("both turns of %s", k).isEqualTo(2));
        assertThat(without).isEqualTo(10);
        Set<String> systems = new HashSet<>();
        t.sent.forEach(o -> systems.add(read(o.body()).get("messages").get(0).get("content").asText()));
        assertThat(systems).as("three shared system prompts").hasSize(3);
    }

    @Test
    void promptsOfASetLengthInTokensHaveFourCharactersAToken() throws InterruptedException {
        LoadConfig c = new LoadConfig(URI.create("http://127.0.0.1:9/"), Api.OLLAMA, 8, Duration.ofSeconds(1),
                Arrivals.UNIFORM, 1, Duration.ofSeconds(5), 100, Mix.parse("m1"), 2, Duration.ZERO, List.of(), 16, 3,
                "t", 16, new Sessions(2, 5, 900, null, null, 0), 100);
        ScriptedTransport t = new ScriptedTransport(clock, r -> ScriptedTransport.ollama(100, 3, 300, 0));

        Runner.Result r = run(c, t);

        assertThat(t.sent).hasSize(8);
        for (Transport.Outgoing o : t.sent) {
            JsonNode messages = read(o.body()).get("messages");
            assertThat(messages.get(0).get("content").asText()).startsWith("You are assistant persona ").hasSize(3600);
            assertThat(messages.get(messages.size() - 1).get("content").asText()).hasSize(400);
        }
        assertThat(r.samples()).allSatisfy(s -> assertThat(s.session()).isNull());
    }

    @Test
    void aSystemSeedKeepsTheSystemPromptsWhileTheRunsSeedChangesTheRest() {
        Sessions own = new Sessions(2, 50, 0, null, null, 0);
        Sessions fixed = new Sessions(2, 50, 0, 11L, null, 0);

        assertThat(fixed.system(12, 1)).isEqualTo(fixed.system(13, 1)).isEqualTo(own.system(11, 1));
        assertThat(own.system(12, 1)).isNotEqualTo(own.system(11, 1));
        assertThat(fixed.system(12, 0)).as("the other prompt").isNotEqualTo(fixed.system(12, 1));
    }

    private JsonNode read(String body) {
        try {
            return json.readTree(body);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void countsTheGeneratorsOwnDelayAsLatency() throws InterruptedException {
        ScriptedTransport t = new ScriptedTransport(clock, r -> ScriptedTransport.ollama(100, 1, 200, 0));
        t.stallNextSend(250_000_000); // the first send blocks the dispatcher for 250 ms

        Runner.Result r = run(simple(10), t);

        // Requests 2 and 3, due at 100 and 200 ms, left at 250 ms and were answered 100 ms later: that is
        // 250 and 150 ms after they were due. Request 4 left on time again.
        assertThat(r.samples()).extracting(Sample::scheduledMs).startsWith(0.0, 100.0, 200.0, 300.0);
        assertThat(r.samples()).extracting(Sample::ttftMs).startsWith(350.0, 250.0, 150.0, 100.0);
    }

    @Test
    void dropsArrivalsBeyondTheInFlightLimitInsteadOfQueueing() throws InterruptedException {
        ScriptedTransport t = new ScriptedTransport(clock, r -> ScriptedTransport.ollama(100, 1, 1000, 0));

        Runner.Result r = run(config(10, Duration.ofSeconds(1), 1, Duration.ZERO, 2, Duration.ofSeconds(5), List.of()), t);

        assertThat(t.sent).hasSize(2);
        assertThat(r.samples()).extracting(Sample::outcome).containsExactly(Outcome.OK, Outcome.OK, Outcome.DROPPED,
                Outcome.DROPPED, Outcome.DROPPED, Outcome.DROPPED, Outcome.DROPPED, Outcome.DROPPED, Outcome.DROPPED,
                Outcome.DROPPED);
        Report report = Report.of(simple(10), r);
        assertThat(report.counts()).isEqualTo(new Report.Counts(10, 2, 2, 0, 0, 8, 0, Map.of()));
    }

    @Test
    void timesOutRequestsFromTheirScheduledStartAndCancelsThem() throws InterruptedException {
        ScriptedTransport t = new ScriptedTransport(clock, r -> List.of(new ScriptedTransport.Step(0, l -> l.headers(200))));

        Runner.Result r = run(config(2, Duration.ofSeconds(1), 1, Duration.ZERO, 100, Duration.ofMillis(500), List.of()), t);

        assertThat(r.samples()).extracting(Sample::outcome).containsExactly(Outcome.TIMEOUT, Outcome.TIMEOUT);
        assertThat(r.samples()).extracting(Sample::totalMs).containsExactly(500.0, 500.0);
        assertThat(r.samples()).extracting(Sample::ttftMs).containsExactly(-1.0, -1.0);
        assertThat(t.cancelled).isEqualTo(2);
        assertThat(r.elapsedNanos()).isEqualTo(1_000_000_000L);
    }

    @Test
    void sendsTheNextTurnAThinkTimeAfterTheAnswerWithTheHistory() throws Exception {
        ScriptedTransport t = new ScriptedTransport(clock, r -> ScriptedTransport.ollama(100, 2, 300, 0));

        // 2 requests/s in turns of 2: one conversation a second, so one in a 1 s window.
        Runner.Result r = run(config(2, Duration.ofSeconds(1), 2, Duration.ofMillis(50), 100, Duration.ofSeconds(5),
                List.of()), t);

        assertThat(r.samples()).extracting(Sample::turn).containsExactly(1, 2);
        Sample second = r.samples().get(1);
        assertThat(second.scheduledMs()).isEqualTo(350.0);
        assertThat(second.ttftMs()).isEqualTo(100.0);
        assertThat(second.promptChars()).isGreaterThan(r.samples().get(0).promptChars());
        JsonNode first = json.readTree(t.sent.get(0).body());
        JsonNode next = json.readTree(t.sent.get(1).body());
        assertThat(first.path("messages")).hasSize(1);
        assertThat(next.path("messages")).hasSize(3);
        assertThat(next.path("messages").get(0)).isEqualTo(first.path("messages").get(0));
        assertThat(next.path("messages").get(1).path("role").asText()).isEqualTo("assistant");
        assertThat(next.path("messages").get(1).path("content").asText()).isEqualTo(" w0 w1");
        assertThat(next.path("messages").get(2).path("role").asText()).isEqualTo("user");
        assertThat(next.path("model").asText()).isEqualTo("m1");
        assertThat(next.path("stream").asBoolean()).isTrue();
        assertThat(next.path("options").path("num_predict").asInt()).isEqualTo(16);
    }

    @Test
    void endsAConversationAtItsFirstFailureAndCountsTheRestSkipped() throws InterruptedException {
        ScriptedTransport t = new ScriptedTransport(clock, r -> List.of(new ScriptedTransport.Step(0, l -> l.headers(503)),
                new ScriptedTransport.Step(1, l -> l.line("{\"error\":\"server busy\"}")),
                new ScriptedTransport.Step(1, Transport.Listener::complete)));

        LoadConfig c = config(3, Duration.ofSeconds(1), 3, Duration.ZERO, 100, Duration.ofSeconds(5), List.of());
        Report report = Report.of(c, run(c, t));

        assertThat(report.counts()).isEqualTo(new Report.Counts(3, 1, 0, 1, 0, 0, 2, Map.of("http_503", 1L)));
        assertThat(report.statuses()).containsExactly(Map.entry("503", 1L));
        assertThat(report.requests().get(0).error()).isEqualTo("server busy");
    }

    @Test
    void sortsFailuresByKind() throws InterruptedException {
        Function<Transport.Outgoing, List<ScriptedTransport.Step>> script = new Function<>() {
            int n;

            @Override
            public List<ScriptedTransport.Step> apply(Transport.Outgoing o) {
                return switch (n++) {
                    case 0 -> List.of(new ScriptedTransport.Step(5, l -> l.failed(new ConnectException("refused"))));
                    case 1 -> List.of(new ScriptedTransport.Step(0, l -> l.headers(200)),
                            new ScriptedTransport.Step(5, l -> l.line("{\"message\":{\"content\":\"a\"},\"done\":false}")),
                            new ScriptedTransport.Step(9, Transport.Listener::complete));
                    case 2 -> List.of(new ScriptedTransport.Step(0, l -> l.headers(200)),
                            new ScriptedTransport.Step(9, l -> l.failed(new IOException("connection reset"))));
                    default -> List.of(new ScriptedTransport.Step(0, l -> l.headers(200)),
                            new ScriptedTransport.Step(5, l -> l.line("{\"error\":\"out of memory\"}")),
                            new ScriptedTransport.Step(9, Transport.Listener::complete));
                };
            }
        };
        LoadConfig c = simple(4);
        Report report = Report.of(c, run(c, new ScriptedTransport(clock, script)));

        assertThat(report.counts().failedByKind()).containsExactly(Map.entry("connect", 1L),
                Map.entry("cut", 2L), Map.entry("stream_error", 1L));
        assertThat(report.requests()).extracting(Sample::error).containsExactly("ConnectException: refused", null,
                "IOException: connection reset", "out of memory");
        assertThat(report.requests().get(1).ttftMs()).isEqualTo(5.0);
    }

    @Test
    void countsAnAnswerWhoseConnectionBrokeAfterTheEndMarkerAsOk() throws InterruptedException {
        ScriptedTransport t = new ScriptedTransport(clock, r -> List.of(new ScriptedTransport.Step(0, l -> l.headers(200)),
                new ScriptedTransport.Step(5, l -> l.line("{\"message\":{\"content\":\"a\"},\"done\":true}")),
                new ScriptedTransport.Step(7, l -> l.failed(new IOException("reset after the last chunk")))));

        Runner.Result r = run(simple(1), t);

        assertThat(r.samples()).singleElement().satisfies(s -> {
            assertThat(s.outcome()).isEqualTo(Outcome.OK);
            assertThat(s.error()).isNull();
            assertThat(s.totalMs()).isEqualTo(7.0);
        });
    }

    @Test
    void sendsEachConversationsKeyRoundRobinAndReportsOnlyLabels() throws Exception {
        ScriptedTransport t = new ScriptedTransport(clock, r -> ScriptedTransport.ollama(10, 1, 20, 1_500_000_000L));
        LoadConfig c = config(3, Duration.ofSeconds(1), 1, Duration.ZERO, 100, Duration.ofSeconds(5),
                List.of("sk-first-secret", "sk-second-secret"));

        Report report = Report.of(c, run(c, t));

        assertThat(t.sent).extracting(Transport.Outgoing::bearer)
                .containsExactly("sk-first-secret", "sk-second-secret", "sk-first-secret");
        assertThat(report.keys()).containsOnlyKeys("sk-fir…", "sk-sec…");
        assertThat(report.keys().get("sk-fir…").count()).isEqualTo(2);
        assertThat(report.keys().get("sk-sec…").count()).isEqualTo(1);
        assertThat(report.waitedOnLoad()).isEqualTo(3);
        assertThat(json.writeValueAsString(report)).doesNotContain("secret");
    }
}
