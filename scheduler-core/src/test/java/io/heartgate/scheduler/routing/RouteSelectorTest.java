package io.heartgate.scheduler.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.status.Ejection;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Route selection on plain values: a snapshot, the request's facts, the nodes tried, the ejected set. */
class RouteSelectorTest {

    private static final Instant NOW = Instant.parse("2026-12-01T10:00:00Z");

    private static Node node(String id, NodeState state, String... models) {
        Heartbeat hb = Heartbeat.builder(id, "http://" + id + ":11434").instance("i1").seq(1L).state(state)
                .intervalMs(1000).models(List.of(models)).build();
        return Node.of(hb, NOW, new InFlight());
    }

    private static TableSnapshot table(Node... nodes) {
        return new TableSnapshot(1, List.of(nodes));
    }

    private static EjectionView ejected(String... ids) {
        Set<String> set = Set.of(ids);
        return new EjectionView() {
            @Override
            public boolean anyEjected() {
                return !set.isEmpty();
            }

            @Override
            public boolean isEjected(String nodeId) {
                return set.contains(nodeId);
            }

            @Override
            public Optional<Ejection> ejection(String nodeId) {
                return Optional.empty();
            }
        };
    }

    private final RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0));
    private final RequestFacts llama = RequestFacts.ofModel(ModelNames.normalize("llama3:8b"));

    private String pick(TableSnapshot t, RequestFacts facts, List<String> tried, EjectionView health) {
        Route r = selector.select(t, facts, tried, health);
        assertThat(r).isInstanceOf(Route.To.class);
        return ((Route.To) r).node().id();
    }

    @Test
    void onlyRoutableNodesServingTheModelAreCandidatesInTurn() {
        TableSnapshot t = table(node("a", NodeState.UP, "llama3:8b"), node("b", NodeState.UP, "qwen2.5:7b"),
                node("c", NodeState.DOWN, "llama3:8b"), node("d", NodeState.UP, "llama3:8b"));
        List<String> picks = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            picks.add(pick(t, llama, List.of(), EjectionView.NONE));
        }
        assertThat(picks).containsExactly("a", "d", "a", "d");
    }

    @Test
    void aRequestWithoutAModelMayGoToAnyRoutableNode() {
        TableSnapshot t = table(node("a", NodeState.UP, "m1"), node("b", NodeState.DRAINING, "m1"), node("c", NodeState.UP, "m2"));
        assertThat(List.of(pick(t, RequestFacts.NONE, List.of(), EjectionView.NONE),
                pick(t, RequestFacts.NONE, List.of(), EjectionView.NONE))).containsExactly("a", "c");
    }

    @Test
    void refusalsAreTyped() {
        assertThat(selector.select(table(), llama, List.of(), EjectionView.NONE))
                .isEqualTo(new Route.Refused(ErrorType.NO_UPSTREAM));
        assertThat(selector.select(table(node("a", NodeState.DOWN, "llama3:8b")), llama, List.of(), EjectionView.NONE))
                .isEqualTo(new Route.Refused(ErrorType.NO_UPSTREAM));
        assertThat(selector.select(table(node("a", NodeState.UP, "qwen2.5:7b")), llama, List.of(), EjectionView.NONE))
                .isEqualTo(new Route.Refused(ErrorType.MODEL_NOT_FOUND));
        assertThat(selector.select(table(node("a", NodeState.UP, "llama3:8b")), llama, List.of("a"), EjectionView.NONE))
                .isEqualTo(new Route.Refused(ErrorType.UPSTREAM_UNREACHABLE));
    }

    @Test
    void aRetryLeavesOutTheNodesTried() {
        TableSnapshot t = table(node("a", NodeState.UP, "llama3:8b"), node("b", NodeState.UP, "llama3:8b"),
                node("c", NodeState.UP, "llama3:8b"));
        assertThat(pick(t, llama, List.of("a", "b"), EjectionView.NONE)).isEqualTo("c");
        assertThat(pick(t, llama, List.of("b"), EjectionView.NONE)).isIn("a", "c");
    }

    @Test
    void ejectedNodesAreLeftOutWhileOthersRemain() {
        TableSnapshot t = table(node("a", NodeState.UP, "llama3:8b"), node("b", NodeState.UP, "llama3:8b"));
        for (int i = 0; i < 3; i++) {
            Route r = selector.select(t, llama, List.of(), ejected("a"));
            assertThat(((Route.To) r).node()).isSameAs(t.node("b"));
            assertThat(((Route.To) r).panic()).isFalse();
        }
    }

    @Test
    void panicModeTriesEjectedNodesWhenEveryCandidateLeftIsEjected() {
        TableSnapshot t = table(node("a", NodeState.UP, "llama3:8b"), node("b", NodeState.UP, "llama3:8b"));

        Route first = selector.select(t, llama, List.of(), ejected("a", "b"));
        Route retry = selector.select(t, llama, List.of("a"), ejected("b"));

        assertThat(first).isInstanceOf(Route.To.class);
        assertThat(((Route.To) first).panic()).isTrue();
        assertThat(((Route.To) retry).node()).isSameAs(t.node("b"));
        assertThat(((Route.To) retry).panic()).isTrue();
        assertThat(selector.select(t, llama, List.of("a", "b"), ejected("a", "b")))
                .isEqualTo(new Route.Refused(ErrorType.UPSTREAM_UNREACHABLE));
    }

    @Test
    void aNodeListingNoModelServesAny() {
        TableSnapshot t = table(node("any", NodeState.UP));
        assertThat(pick(t, llama, List.of(), EjectionView.NONE)).isEqualTo("any");
    }
}
