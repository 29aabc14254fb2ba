package io.heartgate.scheduler.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.scheduler.routing.Lease;
import java.time.Instant;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** A node's token load: its prefill backlog, the speed learned from first tokens, and estimates corrected by usage. */
class TokenLoadTest {

    @Test
    void aRequestIsInTheBacklogFromItsSendingToItsFirstTokenOrItsRelease() {
        Node node = Node.of(Heartbeat.builder("n1", "http://n1:8000").instance("i").seq(1L).intervalMs(1000)
                .capacity(4).models(List.of("m:latest")).build(), Instant.EPOCH, new InFlight());
        TokenLoad t = node.inFlight().tokens();
        Lease a = Lease.take(node);
        Lease b = Lease.take(node);
        a.prefill(300, "m:latest");
        b.prefill(500, "m:latest");
        assertThat(t.backlog()).isEqualTo(800);
        assertThat(t.prefilling()).isEqualTo(2);

        a.sent(1_000);
        a.firstToken(2_000, true);
        assertThat(t.backlog()).isEqualTo(500);
        a.firstToken(3_000, true);
        a.release();
        assertThat(t.backlog()).as("once only").isEqualTo(500);

        b.release(); // a client gone before the first token
        assertThat(t.backlog()).isZero();
        assertThat(t.prefilling()).isZero();
    }

    @Test
    void theLearnedSpeedConvergesOnASimulatedNode() {
        // A node that prefills 5,000 tokens a second across its batch, with 20 ms of fixed cost per request.
        double trueTps = 5_000;
        TokenLoad t = new TokenLoad();
        Random random = new Random(7);
        for (int i = 0; i < 60; i++) {
            long ahead = random.nextInt(8_000);
            long own = 500 + random.nextInt(3_500);
            long nanos = (long) (((ahead + own) / trueTps + 0.020) * 1e9);
            t.firstToken("m:latest", ahead, own, nanos);
        }
        assertThat(t.learned("m:latest")).isTrue();
        assertThat(t.tps("m:latest", null)).isCloseTo(trueTps, within(trueTps * 0.05));
        assertThat(t.tps("other:latest", null)).as("per model").isEqualTo(TokenLoad.DEFAULT_TPS);
        assertThat(t.tps("m:latest", 12_000.0)).as("a figure the node reports wins").isEqualTo(12_000.0);

        // A short request whose first token came while a long prompt ahead was still being prefilled.
        double before = t.tps("m:latest", null);
        t.firstToken("m:latest", 100_000, 300, 50_000_000);
        assertThat(t.tps("m:latest", null)).as("one outlier moves it by a fifth of 4x at most")
                .isLessThanOrEqualTo(before * (1 + 0.2 * 3) + 1);
    }

    @Test
    void anOutlierFirstSampleCountsAtMostFourTimesTheAssumedSpeed() {
        TokenLoad t = new TokenLoad();
        t.firstToken("m", 200_000, 300, 100_000_000); // 2 million tokens a second: a chunked prefill's artefact
        assertThat(t.tps("m", null)).isLessThanOrEqualTo(TokenLoad.DEFAULT_TPS * (1 + TokenLoad.ALPHA * 3) + 1e-9);
        assertThat(t.learned("m")).isTrue();
    }

    @Test
    void tinyPromptsAndZeroTimesTeachNothing() {
        TokenLoad t = new TokenLoad();
        t.firstToken("m", 0, 20, 5_000_000);
        t.firstToken("m", 2_000, 500, 0);
        assertThat(t.learned("m")).isFalse();
    }

    @Test
    void reportedUsageCorrectsTheEstimateOfTokensPerByte() {
        TokenLoad t = new TokenLoad();
        assertThat(t.tokens(4_000)).isEqualTo(1_000);
        for (int i = 0; i < 40; i++) {
            t.reported(4_000, 600); // JSON and a tokenizer with longer tokens: 0.15 tokens a byte
        }
        assertThat(t.tokens(4_000)).isCloseTo(600, within(5L));
        t.reported(300, 9_000); // a Responses follow-up: the node kept the conversation the body does not carry
        assertThat(t.tokens(4_000)).as("not a ratio any body has: passed over").isCloseTo(600, within(5L));
    }

    @Test
    void theWaitIsTheBacklogAndTheOwnTokensOverTheSpeed() {
        TokenLoad t = new TokenLoad();
        t.sent(1_500);
        assertThat(t.waitSeconds(500, 1_000)).isEqualTo(2.0);
    }
}
