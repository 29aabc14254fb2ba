package io.heartgate.scheduler.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.routing.WarmFirst;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.testkit.MutableClock;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Slow start on a fake clock: the ramp, who ramps, and the shares every strategy gives a ramping node. */
class SlowStartTest {

    private final Instant t0 = Instant.parse("2026-12-01T10:00:00Z");
    private final MutableClock clock = new MutableClock(t0);
    private final SlowStart ramp = new SlowStart(clock, Duration.ofSeconds(100));
    private final List<Node> nodes = new ArrayList<>();
    private long version;

    private Node node(String id, NodeState state, Instant lastSeen) {
        return Node.of(Heartbeat.builder(id, "http://10.0.0.1:8000").instance("i").seq(version).state(state)
                .intervalMs(1000).weight(1).build(), lastSeen, new InFlight());
    }

    private TableSnapshot publish(Node... ns) {
        TableSnapshot s = new TableSnapshot(++version, List.of(ns));
        ramp.accept(s);
        return s;
    }

    private void at(long seconds) {
        clock.set(t0.plusSeconds(seconds));
    }

    @Test
    void aNodeThatJoinsRampsLinearlyFromATenthToItsFullShare() {
        publish(node("a", NodeState.UP, clock.instant()));
        assertThat(ramp.any()).isTrue();
        assertThat(ramp.share("a")).isCloseTo(0.1, within(1e-9));
        at(50);
        assertThat(ramp.share("a")).isCloseTo(0.55, within(1e-9));
        at(100);
        assertThat(ramp.share("a")).isEqualTo(1.0);
        assertThat(ramp.any()).isFalse();
        assertThat(ramp.share("never-seen")).isEqualTo(1.0);
    }

    @Test
    void aNodeThatComesBackRampsAgainAndOneReplayedFromTheLookBackDoesNot() {
        // At start the look-back replays a heartbeat from two minutes ago: a node long in service.
        publish(node("old", NodeState.UP, t0.minusSeconds(120)));
        assertThat(ramp.share("old")).isEqualTo(1.0);
        at(10);
        publish(node("old", NodeState.DOWN, clock.instant()));
        at(20);
        publish(node("old", NodeState.UP, clock.instant()));
        assertThat(ramp.share("old")).as("back from DOWN").isCloseTo(0.1, within(1e-9));
        at(30);
        publish(node("old", NodeState.UP, clock.instant())); // renewals change nothing
        assertThat(ramp.share("old")).isCloseTo(0.19, within(1e-9));
    }

    /**
     * With a node at a quarter of its share beside a full one, each strategy gives it a quarter of
     * the half it would get: about 12.5% of 8,000 picks (seeded draws; bounds allow for the mix of
     * the strategy's own rotation and the draws).
     */
    @ParameterizedTest
    @EnumSource(Strategy.class)
    void everyStrategyGivesARampingNodeItsShare(Strategy strategy) {
        TableSnapshot table = publish(node("warm", NodeState.UP, t0.minusSeconds(600)),
                node("new", NodeState.UP, clock.instant()));
        clock.set(t0.plusMillis(16_667)); // 0.1 + 0.9 x 1/6 = 0.25
        assertThat(ramp.share("new")).isCloseTo(0.25, within(1e-4));
        Random draws = new Random(42);
        RouteSelector selector = new RouteSelector(strategy.create(new Random(7), 0), ramp, draws::nextDouble, WarmFirst.OFF, Clock.systemUTC());
        int toNew = 0;
        for (int i = 0; i < 8000; i++) {
            Route.To r = (Route.To) selector.select(table, RequestFacts.NONE, List.of(), EjectionView.NONE);
            if (r.node().id().equals("new")) {
                toNew++;
            }
            r.lease().release(); // one request after another
        }
        assertThat(toNew / 8000.0).as(strategy.label()).isBetween(0.08, 0.17);

        at(120); // ramp over: the usual split
        int after = 0;
        for (int i = 0; i < 8000; i++) {
            Route.To r = (Route.To) selector.select(table, RequestFacts.NONE, List.of(), EjectionView.NONE);
            if (r.node().id().equals("new")) {
                after++;
            }
            r.lease().release();
        }
        if (strategy != Strategy.LEAST_LOADED) { // equal weights: least-loaded keeps its own tie order
            assertThat(after / 8000.0).as(strategy.label() + " after the ramp").isBetween(0.40, 0.60);
        }
    }

    @Test
    void withEveryCandidateDrawnOutTheyAllStay() {
        TableSnapshot table = publish(node("new", NodeState.UP, clock.instant()));
        RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create(), ramp, () -> 0.99, WarmFirst.OFF, Clock.systemUTC());
        assertThat(((Route.To) selector.select(table, RequestFacts.NONE, List.of(), EjectionView.NONE)).node().id())
                .isEqualTo("new");
    }
}
