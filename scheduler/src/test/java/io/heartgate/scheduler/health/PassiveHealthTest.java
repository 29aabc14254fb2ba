package io.heartgate.scheduler.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.status.Ejection;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.testkit.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Pins passive ejection to the millisecond on a {@link MutableClock}, with the scheduler's defaults:
 * 3 connect failures in a row eject for 10 s, doubling per ejection in a row up to 5 minutes
 * (10, 20, 40, 80, 160, 300, 300 s).
 */
class PassiveHealthTest {

    private static final String URL = "http://10.0.0.5:11434";

    private final MutableClock clock = new MutableClock();
    private final Instant t0 = clock.instant();
    private final PassiveHealth health = new PassiveHealth(clock, 3, Duration.ofSeconds(10), Duration.ofMinutes(5));

    private boolean fail(String node, String reason) {
        return health.connectFailed(node, URL, reason);
    }

    private void assertNotEjected(String node) {
        assertThat(health.isEjected(node)).isFalse();
        assertThat(health.ejection(node)).isEmpty();
    }

    @Test
    void ejectsOnTheThirdConsecutiveConnectFailureNotBefore() {
        assertThat(fail("a", "refused 1")).isFalse();
        assertThat(fail("a", "refused 2")).isFalse();

        assertNotEjected("a");
        assertThat(health.anyEjected()).isFalse();
        assertThat(health.ejectedNow()).isZero();
        assertThat(health.ejectionCount()).isZero();

        assertThat(fail("a", "refused 3")).isTrue();

        assertThat(health.isEjected("a")).isTrue();
        assertThat(health.ejection("a")).contains(new Ejection(t0.plusSeconds(10), 3, "refused 3"));
        assertThat(health.anyEjected()).isTrue();
        assertThat(health.ejectedNow()).isEqualTo(1);
        assertThat(health.ejectionCount()).isEqualTo(1);
    }

    @Test
    void returnsToRotationExactlyWhenTheBackOffRunsOut() {
        fail("a", "refused");
        fail("a", "refused");
        fail("a", "refused");

        clock.advance(Duration.ofMillis(9_999));
        assertThat(health.isEjected("a")).isTrue();
        assertThat(health.ejection("a")).contains(new Ejection(t0.plusSeconds(10), 3, "refused"));
        assertThat(health.ejectedNow()).isEqualTo(1);

        clock.advance(Duration.ofMillis(1));
        assertNotEjected("a");
        assertThat(health.ejectedNow()).isZero();
        // anyEjected() is the request path's cheap "may be": it stays true until a success clears the record.
        assertThat(health.anyEjected()).isTrue();
        assertThat(health.ejectionCount()).isEqualTo(1);
    }

    @Test
    void eachFailureRightAfterABackOffEjectsAgainForTwiceAsLongUpToTheMax() {
        fail("a", "refused");
        fail("a", "refused");
        assertThat(fail("a", "refused")).isTrue();

        List<Long> backOffsMs = new ArrayList<>();
        List<Integer> failuresInARow = new ArrayList<>();
        for (int ejection = 1; ejection <= 7; ejection++) {
            Ejection e = health.ejection("a").orElseThrow();
            backOffsMs.add(Duration.between(clock.instant(), e.until()).toMillis());
            failuresInARow.add(e.consecutiveFailures());
            clock.set(e.until());
            assertNotEjected("a");
            // The record survives the back-off: one more failure ejects again, without three new ones.
            assertThat(fail("a", "refused")).isTrue();
        }

        assertThat(backOffsMs).containsExactly(10_000L, 20_000L, 40_000L, 80_000L, 160_000L, 300_000L, 300_000L);
        assertThat(failuresInARow).containsExactly(3, 4, 5, 6, 7, 8, 9);
        assertThat(health.ejectionCount()).isEqualTo(8);
        assertThat(health.ejectedNow()).isEqualTo(1);
    }

    @Test
    void failuresWhileEjectedNeitherExtendNorChangeTheEjection() {
        fail("a", "refused");
        fail("a", "refused");
        fail("a", "refused");
        clock.advance(Duration.ofSeconds(5));

        for (int i = 0; i < 5; i++) {
            assertThat(fail("a", "reset " + i)).isFalse();
        }

        assertThat(health.ejection("a")).contains(new Ejection(t0.plusSeconds(10), 3, "refused"));
        assertThat(health.ejectionCount()).isEqualTo(1);
        clock.set(t0.plusSeconds(10));
        assertNotEjected("a");

        // They still count as failures in a row: the next one ejects for the doubled back-off.
        assertThat(fail("a", "refused again")).isTrue();
        assertThat(health.ejection("a")).contains(new Ejection(t0.plusSeconds(30), 9, "refused again"));
    }

    @Test
    void aSuccessBeforeTheThirdFailureStartsTheCountAgain() {
        fail("a", "refused");
        fail("a", "refused");
        health.succeeded("a");

        assertThat(fail("a", "refused")).isFalse();
        assertThat(fail("a", "refused")).isFalse();
        assertNotEjected("a");
        assertThat(fail("a", "refused")).isTrue();
        assertThat(health.ejection("a")).contains(new Ejection(t0.plusSeconds(10), 3, "refused"));
    }

    @Test
    void aSuccessClearsAnEjectionAtOnceAndResetsTheBackOff() {
        for (int i = 0; i < 3; i++) {
            fail("a", "refused");
        }
        clock.set(t0.plusSeconds(10));
        fail("a", "refused"); // second ejection in a row: 20 s
        assertThat(health.ejection("a")).contains(new Ejection(t0.plusSeconds(30), 4, "refused"));

        health.succeeded("a");

        assertNotEjected("a");
        assertThat(health.anyEjected()).isFalse();
        assertThat(health.ejectedNow()).isZero();
        assertThat(health.ejectionCount()).isEqualTo(2);

        assertThat(fail("a", "refused")).isFalse();
        assertThat(fail("a", "refused")).isFalse();
        assertThat(fail("a", "refused")).isTrue();
        assertThat(health.ejection("a")).contains(new Ejection(t0.plusSeconds(20), 3, "refused"));
        assertThat(health.ejectionCount()).isEqualTo(3);
    }

    @Test
    void tracksEachNodeOnItsOwn() {
        for (int i = 0; i < 3; i++) {
            fail("a", "refused");
        }
        clock.advance(Duration.ofSeconds(4));
        for (int i = 0; i < 3; i++) {
            fail("b", "refused");
        }
        fail("c", "refused");
        health.succeeded("never-failed");

        assertThat(health.ejectedNow()).isEqualTo(2);
        assertNotEjected("c");
        assertNotEjected("never-failed");
        assertThat(health.ejection("b")).contains(new Ejection(t0.plusSeconds(14), 3, "refused"));

        clock.set(t0.plusSeconds(10));
        assertNotEjected("a");
        assertThat(health.isEjected("b")).isTrue();
        assertThat(health.ejectedNow()).isEqualTo(1);

        health.succeeded("b");
        assertNotEjected("b");
        assertThat(health.ejectedNow()).isZero();
        assertThat(health.anyEjected()).as("a's record, back-off over, is not cleared yet").isTrue();
        health.succeeded("a");
        assertThat(health.anyEjected()).isFalse();
        assertThat(health.ejectionCount()).isEqualTo(2);
    }

    @Test
    void aNodeThatLeftTheTableComesBackWithACleanRecord() {
        for (int i = 0; i < 3; i++) {
            fail("a", "refused");
            fail("b", "refused");
        }
        assertThat(health.isEjected("a")).isTrue();
        Node b = Node.of(Heartbeat
                .builder("b", URL).state(NodeState.UP).intervalMs(1000).build(), t0,
                new InFlight());
        health.accept(new TableSnapshot(2, List.of(b))); // a expired

        assertNotEjected("a");
        assertThat(health.isEjected("b")).as("still listed: still ejected").isTrue();
        assertThat(health.ejectedNow()).isEqualTo(1);
        assertThat(fail("a", "refused")).as("a fresh count of failures").isFalse();
    }

    @Test
    void stalledEjectsOnceWithTheConnectBackOffAndAnAnswerClearsIt() {
        assertThat(health.stalled("a", "no answer for 30 s")).isTrue();
        assertThat(health.stalled("a", "no answer for 30 s")).as("already ejected").isFalse();
        assertThat(health.ejection("a")).contains(new Ejection(t0.plusSeconds(10), 0, "stalled: no answer for 30 s"));
        assertThat(health.stallCount()).isEqualTo(1);
        assertThat(health.ejectionCount()).isEqualTo(1);
        clock.advance(Duration.ofSeconds(10));
        assertThat(health.stalled("a", "again")).isTrue();
        assertThat(health.ejection("a").orElseThrow().until()).as("doubled").isEqualTo(t0.plusSeconds(30));
        health.succeeded("a");
        assertNotEjected("a");
    }

    @Test
    void oneFailureEjectsWhenTheThresholdIsOne() {
        PassiveHealth strict = new PassiveHealth(clock, 1, Duration.ofMillis(250), Duration.ofSeconds(1));

        assertThat(strict.connectFailed("a", URL, "refused")).isTrue();
        assertThat(strict.ejection("a")).contains(new Ejection(t0.plusMillis(250), 1, "refused"));
    }

    @Test
    void rejectsAThresholdBelowOne() {
        assertThatThrownBy(() -> new PassiveHealth(clock, 0, Duration.ofSeconds(10), Duration.ofMinutes(5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("failuresToEject must be at least 1");
    }

    @Test
    void ejectionsAndReadmissionsAreToldAndThoseOfOtherReplicasAreTakenWithoutTellingBack() {
        List<String> told = new ArrayList<>();
        health.share(new PassiveHealth.Listener() {
            @Override
            public void ejected(String nodeId, Ejection ejection) {
                told.add("ejected " + nodeId + " until " + ejection.until());
            }

            @Override
            public void readmitted(String nodeId) {
                told.add("readmitted " + nodeId);
            }
        });
        fail("a", "refused");
        fail("a", "refused");
        fail("a", "refused");
        health.succeeded("b"); // never ejected: nothing to tell
        health.succeeded("a");
        assertThat(told).containsExactly("ejected a until " + t0.plusSeconds(10), "readmitted a");

        health.adopt("c", Duration.ofSeconds(30), 3, "refused", "r2");
        assertThat(health.isEjected("c")).isTrue();
        assertThat(health.ejection("c").orElseThrow().until()).isEqualTo(t0.plusSeconds(30));
        health.succeeded("c"); // a stream here ends well: not this replica's ejection to lift for all
        assertThat(told).as("nothing told for an adopted ejection").hasSize(2);
        health.adopt("c", Duration.ofSeconds(30), 3, "refused", "r2");
        health.readmit("c", "r3");
        assertNotEjected("c");
        health.adopt("d", Duration.ofSeconds(-1), 3, "over already", "r2");
        assertNotEjected("d");
        health.adopt("f", Duration.ofDays(365), 3, "a forged or fast clock", "r2");
        assertThat(health.ejection("f").orElseThrow().until()).as("never past the longest ejection")
                .isEqualTo(t0.plus(Duration.ofMinutes(5)));
        assertThat(told).as("nothing told back").hasSize(2);

        // A node adopted as ejected that then fails here backs off from there, as its own would.
        health.adopt("e", Duration.ofSeconds(10), 3, "refused", "r2");
        clock.advance(Duration.ofSeconds(11));
        fail("e", "refused");
        fail("e", "refused");
        fail("e", "refused");
        assertThat(health.ejection("e").orElseThrow().until()).isEqualTo(clock.instant().plusSeconds(20));
    }

    @Test
    void anEjectionAdoptedForANodeNotListedYetStaysToItsEnd() {
        health.adopt("later", Duration.ofSeconds(30), 3, "refused", "r2");
        health.adopt("gone", Duration.ofSeconds(30), 3, "refused", "r2");
        health.accept(TableSnapshot.EMPTY);
        assertThat(health.isEjected("later")).as("a replica starting reads the events before its table is full").isTrue();
        clock.advance(Duration.ofSeconds(31));
        health.accept(TableSnapshot.EMPTY);
        assertThat(health.ejection("later")).isEmpty();
        assertThat(health.ejectedNow()).isZero();
    }
}
