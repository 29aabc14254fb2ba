package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.sim.SimEngine.Admission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The engine on a fake clock: every event is logged as {@code "<ms> <request> <what>"}, a token as its
 * text in brackets, so each test states the exact moment of every token.
 */
class SimEngineTest {

    private final ManualTimers timers = new ManualTimers();
    private final SimStats stats = new SimStats();
    private final List<String> log = new ArrayList<>();
    private Faults faults = Faults.NONE;

    private SimEngine engine(int tokens, long tokenMs, long firstMs, int concurrency, int queue) {
        SimConfig config = new SimConfigBuilder("gpu-t", List.of("m", "n"))
                .timing(tokens, Duration.ofMillis(tokenMs), Duration.ofMillis(firstMs))
                .concurrency(concurrency, queue)
                .build();
        return new SimEngine(config, () -> faults, timers::nanos, timers, stats);
    }

    @Test
    void theUncachedPartOfAPromptAddsItsPrefillTimeBeforeTheFirstToken() {
        SimConfig config = new SimConfigBuilder("n", List.of("m")).timing(2, Duration.ofMillis(10), Duration.ofMillis(100))
                .prefill(1000, 16, Duration.ofMillis(1)).build();
        SimEngine engine = new SimEngine(config, () -> faults, timers::nanos, timers, stats);
        String prompt = "x".repeat(400); // 100 tokens, 25 blocks
        Recorder first = new Recorder("first");
        engine.admit(engine.open("m", Integer.MAX_VALUE, first, prompt, true, 0));
        timers.advanceMs(199);
        assertThat(first.calls).isZero();
        timers.advanceMs(1); // 100 ms first-token delay + 100 tokens x 1 ms
        assertThat(first.calls).isEqualTo(1);
        timers.advanceMs(1_000);
        Recorder again = new Recorder("again");
        Generation continued = engine.open("m", Integer.MAX_VALUE, again, prompt + "y".repeat(40), true, 0);
        assertThat(continued.cachedPromptShare()).as("nothing looked up before it takes a slot").isZero();
        engine.admit(continued); // 10 new tokens
        timers.advanceMs(109);
        assertThat(again.calls).isZero();
        timers.advanceMs(1);
        assertThat(again.calls).isEqualTo(1);
        assertThat(new long[] {engine.prefixCache().queriedTokens(), engine.prefixCache().hitTokens()})
                .containsExactly(100 + 110, 100);
        assertThat(continued.cachedPromptShare()).isEqualTo(400.0 / 440);
    }

    @Test
    void aChatsNextTurnFindsTheAnswerCachedAsVllmKeepsAFinishedRequestsBlocks() {
        SimConfig config = new SimConfigBuilder("n", List.of("m")).timing(8, Duration.ofMillis(1), Duration.ofMillis(1))
                .prefill(1000, 16, Duration.ofMillis(1)).build();
        SimEngine engine = new SimEngine(config, () -> faults, timers::nanos, timers, stats);
        String turn1 = "<system>\n" + "s".repeat(300) + "\n<user>\nhello\n";
        Recorder first = new Recorder("first");
        engine.admit(engine.open("m", Integer.MAX_VALUE, first, turn1, true, 0));
        timers.advanceMs(1_000);
        String turn2 = turn1 + "<assistant>\n" + first.text + "\n<user>\n" + "q".repeat(200) + "\n";
        long hitsBefore = engine.prefixCache().hitTokens();
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("second"), turn2, true, 0));
        int answered = (turn1 + "<assistant>\n" + first.text + "\n").length() / 16 * 16; // whole blocks
        assertThat(engine.prefixCache().hitTokens() - hitsBefore).isEqualTo(answered / 4);
        assertThat(answered).as("more than the first prompt's blocks").isGreaterThan(turn1.length() / 16 * 16);
    }

    @Test
    void sendsTheFirstTokenAfterTheFirstTokenDelayThenOneEveryTokenDelay() {
        SimEngine engine = engine(4, 20, 100, 4, 64);
        Recorder a = new Recorder("a");

        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, a))).isEqualTo(Admission.RUNNING);
        timers.advanceMs(99);
        assertThat(log).isEmpty();
        timers.advanceMs(1);
        assertThat(log).containsExactly("100 a [[gpu-t]]");
        timers.advanceMs(1_000);

        assertThat(log).containsExactly(
                "100 a [[gpu-t]]", "120 a [ the]", "140 a [ GPU]", "160 a [ streams]", "160 a finish stop");
        assertThat(a.text).isEqualTo("[gpu-t] the GPU streams");
        assertThat(a.elapsedNanos).isEqualTo(Duration.ofMillis(160).toNanos());
        assertThat(engine.running()).isZero();
        assertThat(timers.pending()).isZero();
        assertThat(stats.tokensSent.sum()).isEqualTo(4);
        assertThat(stats.completed.sum()).isEqualTo(1);
    }

    @Test
    void lateTimersAreMadeUpSoTheAnswerTakesItsTimeOnABusyHost() {
        SimEngine engine = engine(5, 20, 100, 4, 64);
        timers.lag(Duration.ofMillis(3)); // every timer fires 3 ms late
        Recorder a = new Recorder("a");
        engine.admit(engine.open("m", Integer.MAX_VALUE, a));
        timers.advanceMs(1_000);

        // due at 100, 120, 140, 160, 180: each is sent 3 ms late at most, and the lateness never adds up
        assertThat(log).containsExactly("103 a [[gpu-t]]", "123 a [ the]", "143 a [ GPU]", "163 a [ streams]",
                "183 a [ tokens]", "183 a finish stop");
    }

    @Test
    void aTimerLateByMoreThanATokenSendsTheTokensDueAtOnce() {
        SimEngine engine = engine(5, 20, 100, 4, 64);
        Recorder a = new Recorder("a");
        engine.admit(engine.open("m", Integer.MAX_VALUE, a));
        timers.advanceMs(99);
        timers.stallNext(Duration.ofMillis(45)); // the host stalls: the timer set at 100 for 120 fires at 165
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("100 a [[gpu-t]]", "165 a [ the]", "165 a [ GPU]", "165 a [ streams]",
                "180 a [ tokens]", "180 a finish stop");
    }

    @Test
    void busySlotTimeIntegratesTheRunningGenerations() {
        SimEngine engine = engine(4, 20, 100, 2, 64); // each answer takes 100 + 3 x 20 = 160 ms
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")));
        timers.advanceMs(50);
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b")));
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("c"))); // waits for a's slot at 160
        timers.advanceMs(100);
        assertThat(engine.busySlotNanos()).isEqualTo(Duration.ofMillis(50 + 2 * 100).toNanos());
        timers.advanceMs(1_000); // a 0-160, b 50-210, c 160-320
        assertThat(engine.busySlotNanos()).isEqualTo(Duration.ofMillis(3 * 160).toNanos());
    }

    @Test
    void generatesEveryTokenAtOnceWithZeroDelays() {
        SimEngine engine = engine(3, 0, 0, 1, 0);

        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")));

        assertThat(log).containsExactly("0 a [[gpu-t]]", "0 a [ the]", "0 a [ GPU]", "0 a finish stop");
        assertThat(timers.pending()).isZero();
        assertThat(engine.running()).isZero();
    }

    @Test
    void fillsTheSlotsThenTheQueueThenAnswersBusy() {
        SimEngine engine = engine(1, 10, 10, 2, 1);
        Recorder busy = new Recorder("d");

        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")))).isEqualTo(Admission.RUNNING);
        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b")))).isEqualTo(Admission.RUNNING);
        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("c")))).isEqualTo(Admission.WAITING);
        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, busy))).isEqualTo(Admission.BUSY);

        assertThat(engine.running()).isEqualTo(2);
        assertThat(engine.waiting()).isEqualTo(1);
        assertThat(stats.rejectedBusy.sum()).isEqualTo(1);
        timers.advanceMs(1_000);
        assertThat(log).containsExactly("10 a [[gpu-t]]", "10 a finish stop", "10 b [[gpu-t]]", "10 b finish stop",
                "20 c [[gpu-t]]", "20 c finish stop");
        assertThat(busy.calls).isZero();
    }

    @Test
    void answersBusyAtOnceWhenTheQueueIsZeroAndTheSlotsAreTaken() {
        SimEngine engine = engine(1, 10, 10, 1, 0);

        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")));

        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b")))).isEqualTo(Admission.BUSY);
        assertThat(engine.waiting()).isZero();
    }

    @Test
    void startsTheNextWaitingGenerationTheMomentASlotFrees() {
        SimEngine engine = engine(2, 5, 10, 1, 2);
        Recorder c = new Recorder("c");
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")));
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b")));
        engine.admit(engine.open("m", Integer.MAX_VALUE, c));
        assertThat(engine.waiting()).isEqualTo(2);

        timers.advanceMs(15);
        assertThat(engine.waiting()).isEqualTo(1);
        assertThat(engine.running()).isEqualTo(1);
        timers.advanceMs(1_000);

        assertThat(log).containsExactly(
                "10 a [[gpu-t]]", "15 a [ the]", "15 a finish stop",
                "25 b [[gpu-t]]", "30 b [ the]", "30 b finish stop",
                "40 c [[gpu-t]]", "45 c [ the]", "45 c finish stop");
        assertThat(c.elapsedNanos).as("time in the queue counts").isEqualTo(Duration.ofMillis(45).toNanos());
        assertThat(engine.waiting()).isZero();
        assertThat(engine.running()).isZero();
    }

    @Test
    void cancellingAWaitingGenerationTakesItOutOfTheQueue() {
        SimEngine engine = engine(1, 5, 10, 1, 2);
        Recorder b = new Recorder("b");
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")));
        Generation waiting = engine.open("m", Integer.MAX_VALUE, b);
        engine.admit(waiting);
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("c")));

        engine.cancel(waiting);

        assertThat(engine.waiting()).isEqualTo(1);
        timers.advanceMs(1_000);
        assertThat(log).containsExactly("10 a [[gpu-t]]", "10 a finish stop", "20 c [[gpu-t]]", "20 c finish stop");
        assertThat(b.calls).isZero();
        assertThat(stats.cancelledStreams.sum()).as("only running generations count as cancelled streams").isZero();
    }

    @Test
    void cancellingARunningGenerationStopsItsTokensAndFreesTheSlotAtOnce() {
        SimEngine engine = engine(100, 10, 10, 1, 1);
        Generation a = engine.open("m", Integer.MAX_VALUE, new Recorder("a"));
        engine.admit(a);
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b")));
        timers.advanceMs(25);

        engine.cancel(a);

        assertThat(engine.running()).isEqualTo(1);
        assertThat(engine.waiting()).isZero();
        assertThat(stats.cancelledStreams.sum()).isEqualTo(1);
        assertThat(timers.pending()).as("a's next token is unscheduled; b's first is scheduled").isEqualTo(1);
        timers.advanceMs(20);
        assertThat(log).containsExactly("10 a [[gpu-t]]", "20 a [ the]", "35 b [[gpu-t]]", "45 b [ the]");

        engine.cancel(a);
        assertThat(stats.cancelledStreams.sum()).as("a second cancel does nothing").isEqualTo(1);
        assertThat(engine.running()).isEqualTo(1);
        assertThat(engine.busySlotNanos()).as("the one slot held from 0 to 45 ms, a's 25 then b's 20")
                .isEqualTo(Duration.ofMillis(45).toNanos());
    }

    @Test
    void cancellingAFinishedGenerationDoesNothing() {
        SimEngine engine = engine(1, 0, 0, 1, 0);
        Generation a = engine.open("m", Integer.MAX_VALUE, new Recorder("a"));
        engine.admit(a);

        engine.cancel(a);

        assertThat(engine.running()).isZero();
        assertThat(stats.cancelledStreams.sum()).isZero();
    }

    @Test
    void faultDelaysReplaceTheConfiguredOnesFromTheNextDelayOn() {
        SimEngine engine = engine(3, 10, 100, 1, 0);
        faults = new Faults(false, 0, false, -1, null, 5L);
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")));
        timers.advanceMs(7);

        faults = new Faults(false, 0, false, -1, 50L, 5L);
        timers.advanceMs(1_000);

        // the token at 15 was scheduled at 5, before the change; the one after it waits 50 ms
        assertThat(log).containsExactly("5 a [[gpu-t]]", "15 a [ the]", "65 a [ GPU]", "65 a finish stop");
    }

    @Test
    void hangHoldsTheSlotAndSendsNothingUntilCancelled() {
        SimEngine engine = engine(1, 10, 10, 1, 1);
        faults = new Faults(false, 0, true, -1, null, null);
        Generation hung = engine.open("m", Integer.MAX_VALUE, new Recorder("a"));
        engine.admit(hung);
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b")));

        timers.advance(Duration.ofHours(1));
        assertThat(log).isEmpty();
        assertThat(engine.running()).isEqualTo(1);
        assertThat(engine.waiting()).isEqualTo(1);
        assertThat(timers.pending()).isZero();

        faults = Faults.NONE;
        engine.cancel(hung);
        timers.advanceMs(10);

        assertThat(log).containsExactly("3600010 b [[gpu-t]]", "3600010 b finish stop");
        assertThat(stats.cancelledStreams.sum()).isEqualTo(1);
    }

    @Test
    void dropAfterTokensCutsWhereTheNextTokenWouldComeAndFreesTheSlot() {
        SimEngine engine = engine(4, 5, 10, 1, 0);
        faults = new Faults(false, 0, false, 2, null, null);

        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")));
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("10 a [[gpu-t]]", "15 a [ the]", "20 a cut");
        assertThat(engine.running()).isZero();
        assertThat(stats.droppedConnections.sum()).isEqualTo(1);
        assertThat(stats.tokensSent.sum()).isEqualTo(2);
        assertThat(stats.completed.sum()).isZero();
    }

    @Test
    void dropAfterZeroTokensCutsWhenTheFirstTokenWouldCome() {
        SimEngine engine = engine(4, 5, 10, 1, 0);
        faults = new Faults(false, 0, false, 0, null, null);

        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")));
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("10 a cut");
    }

    @Test
    void capsTheTokensAtTheRequestsLimitAndSaysLength() {
        SimEngine engine = engine(8, 0, 0, 1, 0);
        Recorder limited = new Recorder("a");
        Recorder unlimited = new Recorder("b");
        Recorder above = new Recorder("c");

        engine.admit(engine.open("m", 3, limited));
        engine.admit(engine.open("m", Integer.MAX_VALUE, unlimited));
        engine.admit(engine.open("m", 20, above));

        assertThat(limited.text).isEqualTo("[gpu-t] the GPU");
        assertThat(log).contains("0 a finish length", "0 b finish stop", "0 c finish stop");
        assertThat(stats.tokensSent.sum()).isEqualTo(3 + 8 + 8);
    }

    @Test
    void numbersGenerationsRefusedOnesIncludedAndEmbeddingsInOneSequence() {
        SimEngine engine = engine(1, 10, 10, 1, 0);
        Generation first = engine.open("m", Integer.MAX_VALUE, new Recorder("a"));
        engine.admit(first);
        Generation refused = engine.open("m", Integer.MAX_VALUE, new Recorder("b"));
        engine.admit(refused);

        assertThat(first.number()).isEqualTo(1);
        assertThat(refused.number()).isEqualTo(2);
        assertThat(engine.nextRequestNumber()).isEqualTo(3);
        assertThat(engine.open("m", 1, new Recorder("c")).number()).isEqualTo(4);
    }

    @Test
    void refusesToAdmitAGenerationTwice() {
        SimEngine engine = engine(1, 10, 10, 1, 0);
        Generation g = engine.open("m", Integer.MAX_VALUE, new Recorder("a"));
        engine.admit(g);

        assertThatThrownBy(() -> engine.admit(g)).isInstanceOf(IllegalStateException.class);
        assertThat(engine.running()).isEqualTo(1);
    }

    private SimEngine loadingEngine(int maxLoaded, long loadMs, int concurrency, int queue) {
        SimConfig config = new SimConfigBuilder("gpu-t", List.of("m", "n", "o"))
                .timing(2, Duration.ofMillis(10), Duration.ofMillis(10))
                .concurrency(concurrency, queue)
                .loading(maxLoaded, Duration.ofMillis(loadMs))
                .build();
        return new SimEngine(config, () -> faults, timers::nanos, timers, stats);
    }

    @Test
    void holdsEveryModelFromTheStartWithoutALimitOrLoadTime() {
        SimEngine engine = engine(1, 10, 10, 1, 0);

        assertThat(engine.loadedModels()).containsExactlyInAnyOrder("m", "n");
        engine.admit(engine.open("n", Integer.MAX_VALUE, new Recorder("a")));
        timers.advanceMs(100);
        assertThat(stats.modelLoads.sum()).isZero();
    }

    @Test
    void loadsAModelOnDemandThenServesFromMemory() {
        SimEngine engine = loadingEngine(1, 500, 4, 64);
        assertThat(engine.loadedModels()).isEmpty();
        Recorder a = new Recorder("a");
        Recorder b = new Recorder("b");

        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, a))).isEqualTo(Admission.WAITING);
        timers.advanceMs(200);
        engine.admit(engine.open("m", Integer.MAX_VALUE, b));
        assertThat(engine.loading()).isEqualTo("m");
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("510 a [[gpu-t]]", "510 b [[gpu-t]]", "520 a [ the]", "520 a finish stop",
                "520 b [ the]", "520 b finish stop");
        assertThat(engine.loadedModels()).containsExactly("m");
        assertThat(stats.modelLoads.sum()).isEqualTo(1);
        assertThat(a.loadWaitNanos).isEqualTo(Duration.ofMillis(500).toNanos());
        assertThat(b.loadWaitNanos).isEqualTo(Duration.ofMillis(300).toNanos()); // it came 200 ms into the load

        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("c")));
        timers.advanceMs(100);
        assertThat(stats.modelLoads.sum()).isEqualTo(1);
        assertThat(log).contains("1210 c [[gpu-t]]");
    }

    @Test
    void evictsTheLeastRecentlyUsedIdleModelWhenMemoryIsFull() {
        SimEngine engine = loadingEngine(2, 100, 4, 64);
        for (String model : List.of("m", "n", "m")) {
            engine.admit(engine.open(model, Integer.MAX_VALUE, new Recorder(model)));
            timers.advanceMs(1_000);
        }
        assertThat(engine.loadedModels()).containsExactly("m", "n"); // m used last

        engine.admit(engine.open("o", Integer.MAX_VALUE, new Recorder("o")));
        timers.advanceMs(1_000);

        assertThat(engine.loadedModels()).containsExactly("o", "m");
        assertThat(stats.modelLoads.sum()).isEqualTo(3);
        assertThat(stats.modelEvictions.sum()).isEqualTo(1);
    }

    @Test
    void neverEvictsAModelThatIsGeneratingAndServesTheQueueInOrder() {
        SimEngine engine = loadingEngine(1, 100, 4, 64);
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("m1")));
        timers.advanceMs(105); // m loaded at 100, m1 generates until 120
        engine.admit(engine.open("n", Integer.MAX_VALUE, new Recorder("n1")));
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("m2"))); // behind n1: waits for n's load
        assertThat(engine.loading()).isNull();
        assertThat(engine.waiting()).isEqualTo(2);

        timers.advanceMs(1_000);

        assertThat(log).containsSubsequence("120 m1 finish stop", "230 n1 [[gpu-t]]", "240 n1 finish stop",
                "350 m2 [[gpu-t]]"); // n loads from 120 to 220, then m again from 240 to 340
        assertThat(stats.modelLoads.sum()).isEqualTo(3);
        assertThat(stats.modelEvictions.sum()).isEqualTo(2);
    }

    @Test
    void refusesAsBusyWhenTheQueueIsFullWhileALoadRunsNotCountingTheRequestThatWaitsForIt() {
        SimEngine engine = loadingEngine(1, 100, 4, 1);

        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")))).isEqualTo(Admission.WAITING);
        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b"))))
                .as("the one place in the queue: a waits for its load, not in it").isEqualTo(Admission.WAITING);
        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("c")))).isEqualTo(Admission.BUSY);
        timers.advanceMs(1_000);
        assertThat(log).contains("110 a [[gpu-t]]", "120 a finish stop", "110 b [[gpu-t]]", "120 b finish stop");
        assertThat(stats.rejectedBusy.sum()).isEqualTo(1);
    }

    @Test
    void aRequestWithASlotFreeWaitsForItsLoadEvenWithNoQueue() {
        SimEngine engine = loadingEngine(1, 100, 4, 0);

        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("a")))).isEqualTo(Admission.WAITING);
        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b")))).isEqualTo(Admission.BUSY);
        timers.advanceMs(1_000);

        assertThat(log).containsExactly("110 a [[gpu-t]]", "120 a [ the]", "120 a finish stop");
        assertThat(stats.modelLoads.sum()).isEqualTo(1);
        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("c")))).isEqualTo(Admission.RUNNING);
    }

    @Test
    void aCancelWhileItsModelLoadsFreesTheQueueAndTheLoadStillCompletes() {
        SimEngine engine = loadingEngine(1, 100, 4, 64);
        Generation a = engine.open("m", Integer.MAX_VALUE, new Recorder("a"));
        engine.admit(a);
        timers.advanceMs(50);

        engine.cancel(a);
        assertThat(engine.waiting()).isZero();
        timers.advanceMs(100);

        assertThat(engine.loadedModels()).containsExactly("m");
        assertThat(log).isEmpty();
        assertThat(engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("b")))).isEqualTo(Admission.RUNNING);
    }

    @Test
    void aCancelledHeadLetsTheNextRequestStart() {
        SimEngine engine = loadingEngine(1, 100, 4, 64);
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("m1")));
        timers.advanceMs(105);
        Generation n1 = engine.open("n", Integer.MAX_VALUE, new Recorder("n1"));
        engine.admit(n1);
        engine.admit(engine.open("m", Integer.MAX_VALUE, new Recorder("m2")));

        engine.cancel(n1);
        timers.advanceMs(1_000);

        assertThat(log).contains("115 m2 [[gpu-t]]"); // m2 starts at once: m is in memory
        assertThat(stats.modelLoads.sum()).isEqualTo(1);
    }

    @Test
    void servesTheConfiguredModelsTheFirstByDefault() {
        SimEngine engine = engine(1, 10, 10, 1, 0);

        assertThat(engine.models()).containsExactly("m", "n");
        assertThat(engine.defaultModel()).isEqualTo("m");
        assertThat(engine.serves("n")).isTrue();
        assertThat(engine.serves("llama3:8b")).isFalse();
        assertThat(engine.embedding("m", "a")).hasSize(8).isEqualTo(TextSource.embedding("m", "a", 8));
    }

    /** Logs what the engine hands one request, and keeps what its final call saw. */
    private final class Recorder implements TokenSink {
        private final String label;
        private int calls;
        private String text;
        private long elapsedNanos = -1;
        private long loadWaitNanos = -1;

        Recorder(String label) {
            this.label = label;
        }

        @Override
        public void token(Generation g, String token) {
            record("[" + token + "]");
        }

        @Override
        public void finish(Generation g) {
            text = g.text();
            elapsedNanos = g.elapsedNanos();
            loadWaitNanos = g.loadWaitNanos();
            record("finish " + g.finishReason());
        }

        @Override
        public void cut(Generation g) {
            record("cut");
        }

        private void record(String what) {
            calls++;
            log.add(timers.nowMs() + " " + label + " " + what);
        }
    }
}
