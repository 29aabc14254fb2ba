package io.heartgate.scheduler.health;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.testkit.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Flap damping on a fake clock: at most 3 changes in 60 s, then a hold that doubles, then release. */
class FlapDampingTest {

    private final Instant t0 = Instant.parse("2026-12-01T10:00:00Z");
    private final MutableClock clock = new MutableClock(t0);
    private final FlapDamping damping = new FlapDamping(clock, 3, Duration.ofSeconds(60));
    private long version;

    private void table(Object... idsAndStates) {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < idsAndStates.length; i += 2) {
            nodes.add(Node.of(Heartbeat.builder((String) idsAndStates[i], "http://10.0.0.1:8000").instance("i")
                    .seq(version).state((NodeState) idsAndStates[i + 1]).intervalMs(1000).build(), clock.instant(),
                    new InFlight()));
        }
        damping.accept(new TableSnapshot(++version, nodes));
    }

    private void at(long seconds) {
        clock.set(t0.plusSeconds(seconds));
    }

    @Test
    void threeChangesInAWindowAreAllowedAndTheFourthHoldsTheNode() {
        table("a", NodeState.UP, "b", NodeState.UP); // a joins: change 1
        at(10);
        table("a", NodeState.DOWN, "b", NodeState.UP); // 2
        at(20);
        table("a", NodeState.UP, "b", NodeState.UP); // 3
        assertThat(damping.isEjected("a")).isFalse();
        at(30);
        table("b", NodeState.UP); // a expires: 4
        assertThat(damping.isEjected("a")).isTrue();
        assertThat(damping.ejection("a").orElseThrow().reason()).isEqualTo("flapping: 4 changes in 60 s; held for 60 s");
        assertThat(damping.isEjected("b")).isFalse();
    }

    @Test
    void eachHoldIsToldAndAnotherReplicasHoldIsKeptToItsEnd() {
        List<String> told = new ArrayList<>();
        damping.share((id, hold) -> told.add(id + " until " + hold.until()));
        table("a", NodeState.UP);
        at(10);
        table("a", NodeState.DOWN);
        at(20);
        table("a", NodeState.UP);
        at(30);
        table(); // held: 4 changes, until 30 + 60 s
        at(35);
        table("a", NodeState.UP); // a change while held: the hold doubles, from 35 s
        assertThat(told).containsExactly("a until 2026-12-01T10:01:30Z", "a until 2026-12-01T10:02:35Z");

        // Another replica holds b for 45 s: so does this one, though it saw b change only once.
        damping.adopt("b", Duration.ofSeconds(45), "flapping: 5 changes in 60 s; held for 60 s", "r2");
        table("a", NodeState.UP, "b", NodeState.UP);
        assertThat(damping.isEjected("b")).isTrue();
        assertThat(damping.ejection("b").orElseThrow().describe())
                .isEqualTo("held: flapping: 5 changes in 60 s; held for 60 s (by replica r2)");
        assertThat(damping.anyEjected()).isTrue();
        damping.adopt("b", Duration.ofSeconds(10), "flapping: an older record", "r3"); // shorter: the longer stays
        at(79);
        assertThat(damping.isEjected("b")).isTrue();
        at(80);
        table("a", NodeState.UP, "b", NodeState.UP);
        assertThat(damping.isEjected("b")).isFalse();
        // Its own hold of a ends later than an adopted one: its own is shown.
        damping.adopt("a", Duration.ofSeconds(5), "flapping: elsewhere", "r2");
        assertThat(damping.ejection("a").orElseThrow().reason()).startsWith("flapping: 5 changes");
        assertThat(told).hasSize(2); // adopted holds are not told again
        damping.adopt("c", Duration.ofDays(1), "flapping: forever", "r9"); // no longer than its own longest
        assertThat(damping.ejection("c").orElseThrow().until()).isEqualTo(clock.instant().plus(Duration.ofMinutes(32)));
    }

    @Test
    void withDampingOffNoHoldIsAdopted() {
        FlapDamping off = new FlapDamping(clock, 0, Duration.ofSeconds(60));
        off.adopt("b", Duration.ofSeconds(45), "flapping", "r2");
        assertThat(off.isEjected("b")).isFalse();
        assertThat(off.anyEjected()).isFalse();
    }

    @Test
    void oneRestartOfANodeIsTwoChangesNotFive() {
        table("a", NodeState.UP); // joins: 1
        at(10);
        table("a", NodeState.DOWN); // its server dies: 2
        at(12);
        table(); // its agent dies too: it expires, but it was not routable anyway
        at(20);
        table("a", NodeState.DOWN); // back, its server still starting
        at(22);
        table("a", NodeState.UP); // 3
        assertThat(damping.isEjected("a")).isFalse();
        at(30);
        table(); // expiring while routable is a change: 4
        assertThat(damping.isEjected("a")).isTrue();
    }

    @Test
    void changesOlderThanTheWindowDoNotCount() {
        table("a", NodeState.UP);
        at(30);
        table("a", NodeState.DOWN);
        at(61); // the join fell out of the window
        table("a", NodeState.UP);
        at(70);
        table("a", NodeState.DOWN);
        assertThat(damping.isEjected("a")).isFalse();
    }

    @Test
    void drainingIsNeitherUpNorDownAndNeverAFlap() {
        table("a", NodeState.UP);
        for (int i = 1; i <= 6; i++) {
            at(i);
            table("a", i % 2 == 0 ? NodeState.UP : NodeState.DRAINING);
        }
        assertThat(damping.isEjected("a")).isFalse();
    }

    @Test
    void theHoldDoublesWhileTheNodeKeepsFlappingAndEndsAfterASteadyWindow() {
        table("a", NodeState.UP);
        at(1);
        table("a", NodeState.DOWN);
        at(2);
        table("a", NodeState.UP);
        at(3);
        table("a", NodeState.DOWN); // 4 changes: held until 63
        assertThat(damping.ejection("a").orElseThrow().until()).isEqualTo(t0.plusSeconds(63));
        at(30);
        table("a", NodeState.UP); // flaps while held: 120 s from now
        assertThat(damping.ejection("a").orElseThrow().until()).isEqualTo(t0.plusSeconds(150));
        at(40);
        table("a", NodeState.DOWN); // and again: 240 s
        assertThat(damping.ejection("a").orElseThrow().until()).isEqualTo(t0.plusSeconds(280));
        at(100);
        table("a", NodeState.UP); // the last change: 480 s
        assertThat(damping.ejection("a").orElseThrow().until()).isEqualTo(t0.plusSeconds(580));

        at(579);
        assertThat(damping.isEjected("a")).isTrue();
        at(580);
        assertThat(damping.isEjected("a")).as("held no longer once the back-off passed, steady").isFalse();
        table("a", NodeState.UP); // the next snapshot clears its record
        at(581);
        table("a", NodeState.DOWN);
        assertThat(damping.isEjected("a")).as("a single change after release starts afresh").isFalse();
    }

    @Test
    void aLimitOfZeroTurnsItOff() {
        FlapDamping off = new FlapDamping(clock, 0, Duration.ofSeconds(60));
        for (int i = 0; i < 10; i++) {
            at(i);
            off.accept(new TableSnapshot(i, i % 2 == 0 ? List.of() : List.of(Node.of(Heartbeat.builder("a",
                    "http://10.0.0.1:8000").state(NodeState.UP).intervalMs(1000).build(), clock.instant(), new InFlight()))));
        }
        assertThat(off.isEjected("a")).isFalse();
        assertThat(off.anyEjected()).isFalse();
    }
}
