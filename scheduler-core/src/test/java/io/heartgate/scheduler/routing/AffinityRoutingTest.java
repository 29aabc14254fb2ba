package io.heartgate.scheduler.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.balancer.AffinityBalancer;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.status.Ramp;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The affinity strategy through the route selector: claims, retries, and how each route says it was placed. */
class AffinityRoutingTest {

    private static final Instant NOW = Instant.parse("2026-12-01T12:00:00Z");

    private static Node node(String id, Integer capacity) {
        Heartbeat hb = Heartbeat.builder(id, "http://" + id + ":8000").instance("i1").seq(1L).intervalMs(1000)
                .capacity(capacity).models(List.of("m:latest")).build();
        return Node.of(hb, NOW, new InFlight());
    }

    private final RouteSelector selector = new RouteSelector(Strategy.affinity(1.25, Strategy.ROUND_ROBIN));
    private final RequestFacts keyed = RequestFacts.ofModel("m:latest").withAffinity(KeyHash.of("conversation-1"));

    private static TableSnapshot fleet(Integer capacity) {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            nodes.add(node("n" + i, capacity));
        }
        return new TableSnapshot(1, nodes);
    }

    @Test
    void aKeyedRequestHitsItsNodeAndSpillsWhenItIsFull() {
        TableSnapshot t = fleet(1);
        Route.To first = (Route.To) selector.select(t, keyed, List.of(), EjectionView.NONE);
        assertThat(first.affinity()).isEqualTo(AffinityPick.HIT);
        assertThat(first.lease().bounded()).as("its slot claimed").isTrue();

        Route.To second = (Route.To) selector.select(t, keyed, List.of(), EjectionView.NONE);
        assertThat(second.node()).isNotSameAs(first.node());
        assertThat(second.affinity()).isEqualTo(AffinityPick.spill(first.node().id()));

        first.lease().release();
        second.lease().release();
        assertThat(((Route.To) selector.select(t, keyed, List.of(), EjectionView.NONE)).node()).isSameAs(first.node());
    }

    @Test
    void everyNodeFullMeansTheQueue() {
        TableSnapshot t = fleet(1);
        for (int i = 0; i < 4; i++) {
            assertThat(selector.select(t, keyed, List.of(), EjectionView.NONE)).isInstanceOf(Route.To.class);
        }
        assertThat(selector.select(t, keyed, List.of(), EjectionView.NONE)).isSameAs(Route.Refused.FULL);
    }

    @Test
    void aRetryGoesToTheNextNodeOnTheRingAndAKeylessRequestSaysNone() {
        TableSnapshot t = fleet(null);
        Route.To first = (Route.To) selector.select(t, keyed, List.of(), EjectionView.NONE);
        List<Node> others = t.candidates("m:latest").stream().filter(n -> n != first.node()).toList();
        AffinityBalancer successor = (AffinityBalancer) Strategy.affinity(1.25, Strategy.ROUND_ROBIN);
        Node next = successor.pick(t.candidates("m:latest"), others, keyed.affinity()).node();
        Route.To retry = (Route.To) selector.select(t, keyed, List.of(first.node().id()), EjectionView.NONE);
        assertThat(retry.node()).isNotSameAs(first.node());
        assertThat(retry.affinity()).as("not its own node, nor over a bound").isEqualTo(AffinityPick.spill(null));
        assertThat(retry.node()).as("the key's next node on the ring").isSameAs(next);
        retry.lease().release();
        Route.To again = (Route.To) selector.select(t, keyed, List.of(first.node().id()), EjectionView.NONE);
        assertThat(again.node()).as("the same next node each time").isSameAs(retry.node());

        Route.To none = (Route.To) selector.select(t, RequestFacts.ofModel("m:latest"), List.of(), EjectionView.NONE);
        assertThat(none.affinity()).isEqualTo(AffinityPick.NONE);
        assertThat(selector.affinityKeys()).isNotNull();
        assertThat(new RouteSelector(Strategy.ROUND_ROBIN.create()).affinityKeys()).as("nothing to read").isNull();
        assertThat(((Route.To) new RouteSelector(Strategy.ROUND_ROBIN.create()).select(t, keyed, List.of(),
                EjectionView.NONE)).affinity()).isNull();
    }

    @Test
    void warmNodesAllFullSpillToAColdNodeWithRoomInsteadOfQueueing() {
        Heartbeat warmHb = Heartbeat.builder("warm", "http://warm:11434").instance("i1").seq(1L).intervalMs(1000)
                .backend("ollama").capacity(1).models(List.of("m:latest"))
                .loaded(List.of(new LoadedModel("m:latest", 4_661_224_676L, 4_661_224_676L, null, 4096))).build();
        Heartbeat coldHb = Heartbeat.builder("cold", "http://cold:11434").instance("i1").seq(1L).intervalMs(1000)
                .backend("ollama").capacity(1).models(List.of("m:latest")).build();
        Node warm = Node.of(warmHb, NOW, new InFlight());
        Node cold = Node.of(coldHb, NOW, new InFlight());
        TableSnapshot t = new TableSnapshot(1, List.of(warm, cold));
        RouteSelector warmFirst = new RouteSelector(Strategy.affinity(1.25, Strategy.ROUND_ROBIN), Ramp.NONE,
                () -> 0.0, new WarmFirst(true, 4), Clock.fixed(NOW, ZoneOffset.UTC));

        Route.To first = (Route.To) warmFirst.select(t, keyed, List.of(), EjectionView.NONE);
        assertThat(first.node()).as("the warm node first").isSameAs(warm);
        Route second = warmFirst.select(t, keyed, List.of(), EjectionView.NONE);
        assertThat(second).as("the warm node is full: the idle cold one, not the queue").isInstanceOf(Route.To.class);
        assertThat(((Route.To) second).node()).isSameAs(cold);
        assertThat(((Route.To) second).lease().bounded()).isTrue();
        assertThat(warmFirst.select(t, keyed, List.of(), EjectionView.NONE)).isSameAs(Route.Refused.FULL);
    }

    @Test
    void spillingFromFullWarmNodesPrefersAColdOneWithMemoryFree() {
        Node warm = ollamaNode("warm", "m:latest");
        Node empty = ollamaNode("empty");
        Node other = ollamaNode("other", "x:latest"); // its memory holds another model
        TableSnapshot t = new TableSnapshot(1, List.of(warm, empty, other));
        RouteSelector warmFirst = new RouteSelector(Strategy.affinity(1.25, Strategy.ROUND_ROBIN), Ramp.NONE,
                () -> 0.0, new WarmFirst(true, 4), Clock.fixed(NOW, ZoneOffset.UTC));
        assertThat(warm.inFlight().tryIncrement(warm.limit())).isTrue(); // the warm node's one slot taken

        for (int i = 0; i < 16; i++) {
            RequestFacts facts = RequestFacts.ofModel("m:latest").withAffinity(KeyHash.of("conversation-" + i));
            Route.To r = (Route.To) warmFirst.select(t, facts, List.of(), EjectionView.NONE);
            assertThat(r.node()).as("key %d: the cold node with memory free, wherever its ring puts it", i)
                    .isSameAs(empty);
            r.lease().release();
        }
    }

    private static Node ollamaNode(String id, String... loaded) {
        List<LoadedModel> inMemory = new ArrayList<>();
        for (String m : loaded) {
            inMemory.add(new LoadedModel(m, 4_661_224_676L, 4_661_224_676L, null, 4096));
        }
        Heartbeat hb = Heartbeat.builder(id, "http://" + id + ":11434").instance("i1").seq(1L).intervalMs(1000)
                .backend("ollama").capacity(1).models(List.of("m:latest", "x:latest")).loaded(inMemory).build();
        return Node.of(hb, NOW, new InFlight());
    }
}
