package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Where a continued answer starts, read from the request, and how the engine goes on from there, on
 * a fake clock: every event is logged as {@code "<ms> <what>"}, a token as its text in brackets.
 */
class ContinuationTest {

    private final ManualTimers timers = new ManualTimers();
    private final SimStats stats = new SimStats();
    private final List<String> log = new ArrayList<>();
    private Faults faults = Faults.NONE;

    private SimEngine engine(int tokens) {
        SimConfig config = new SimConfigBuilder("gpu-t", List.of("m"))
                .timing(tokens, Duration.ofMillis(5), Duration.ofMillis(10)).build();
        return new SimEngine(config, () -> faults, timers::nanos, timers, stats);
    }

    @Test
    void aRawPromptContinuesFromItsLastMarkerWhenWhatFollowsIsSimOutput() {
        assertThat(Continuation.fromPrompt("Q: why?\nA: [gpu-a] the GPU streams tokens ")).isEqualTo(5);
        assertThat(Continuation.fromPrompt("[old] the\n[gpu-b] the GPU")).isEqualTo(3);
        assertThat(Continuation.fromPrompt("[gpu-a] the GPU and then my own words")).isZero();
        assertThat(Continuation.fromPrompt("why is the sky blue")).isZero();
        assertThat(Continuation.fromPrompt(new JsonArray().add("[gpu-a] the"))).as("not a string").isZero();
    }

    @Test
    void anAssistantMessageContinuesFromWhereItsTextLeavesOffAndNeverFromTheMarker() {
        JsonObject sim = new JsonObject().put("role", "assistant").put("content", "[gpu-a] the GPU");
        JsonObject other = new JsonObject().put("role", "assistant").put("content", "Sure, here is");
        JsonObject body = new JsonObject().put("messages", new JsonArray()
                .add(new JsonObject().put("role", "user").put("content", "hi")).add(sim));

        assertThat(Continuation.fromAssistant(sim)).isEqualTo(3);
        assertThat(Continuation.fromAssistant(other)).isEqualTo(1);
        assertThat(Continuation.lastMessage(body)).contains(sim);
        assertThat(Continuation.lastMessage(new JsonObject().put("messages", new JsonArray()))).isEmpty();
        assertThat(Continuation.isAssistant(sim)).isTrue();
    }

    @Test
    void sendsTokensFromStartOnWithinTheRequestsLimit() {
        SimEngine engine = engine(32);
        Recorder r = new Recorder();

        engine.admit(engine.open("m", 3, r, "", true, 5));
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("10 [ quickly]", "15 [ while]", "20 [ the]", "20 finish length 3");
        assertThat(r.text).isEqualTo(" quickly while the");
    }

    @Test
    void neverGoesPastTheConfiguredCountInAllAndSaysStopThere() {
        SimEngine engine = engine(6);

        engine.admit(engine.open("m", 10, new Recorder(), "", false, 4));
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("10 [ tokens]", "15 [ quickly]", "15 finish stop 2");
    }

    @Test
    void aPartialAnswerThatWasWholeFinishesAtOnceWithNoToken() {
        SimEngine engine = engine(6);
        Recorder r = new Recorder();

        engine.admit(engine.open("m", 10, r, "", false, 6));
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("10 finish stop 0");
        assertThat(r.text).isEmpty();
        assertThat(engine.running()).isZero();
        assertThat(stats.completed.sum()).isEqualTo(1);
    }

    @Test
    void dropAfterTokensCountsTheTokensOfThisAnswer() {
        SimEngine engine = engine(32);
        faults = new Faults(false, 0, false, 2, null, null);

        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder(), "", true, 10));
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("10 [ each]", "15 [ request]", "20 cut");
        assertThat(stats.droppedConnections.sum()).isEqualTo(1);
    }

    /** Logs what the engine hands one request, and keeps the text its finish saw. */
    private final class Recorder implements TokenSink {
        private String text;

        @Override
        public void token(Generation g, String token) {
            log.add(timers.nowMs() + " [" + token + "]");
        }

        @Override
        public void finish(Generation g) {
            text = g.text();
            log.add(timers.nowMs() + " finish " + g.finishReason() + " " + g.sent());
        }

        @Override
        public void cut(Generation g) {
            log.add(timers.nowMs() + " cut");
        }
    }
}
