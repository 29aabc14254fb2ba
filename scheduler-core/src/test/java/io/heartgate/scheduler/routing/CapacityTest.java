package io.heartgate.scheduler.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.status.Ejection;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/** Capacity on plain snapshots: a slot is claimed per route, never more than the node has. */
class CapacityTest {

    private static final Instant NOW = Instant.parse("2026-12-01T10:00:00Z");

    private static Heartbeat hb(String id, Integer capacity, Load load) {
        return Heartbeat.builder(id, "http://" + id + ":8000").instance("i1").seq(1L).intervalMs(1000)
                .capacity(capacity).load(load).build();
    }

    private static Node node(String id, Integer capacity) {
        return Node.of(hb(id, capacity, Load.UNKNOWN), NOW, new InFlight());
    }

    private final RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0));

    private Route select(TableSnapshot t, List<String> tried) {
        return selector.select(t, RequestFacts.NONE, tried, EjectionView.NONE);
    }

    @Test
    void aNodeOfKnownCapacityIsNeverSentMoreThanItsSlots() {
        Node a = node("a", 2);
        Node b = node("b", 1);
        TableSnapshot t = new TableSnapshot(1, List.of(a, b));
        for (int i = 0; i < 3; i++) {
            Route r = select(t, List.of());
            assertThat(r).isInstanceOf(Route.To.class);
            assertThat(((Route.To) r).lease().bounded()).isTrue();
        }
        assertThat(a.inFlight().get()).isEqualTo(2);
        assertThat(b.inFlight().get()).isEqualTo(1);
        assertThat(select(t, List.of())).isSameAs(Route.Refused.FULL);
        assertThat(a.inFlight().get()).isEqualTo(2);
        b.inFlight().decrement(); // a request on b ended
        Route r = select(t, List.of());
        assertThat(((Route.To) r).node().id()).isEqualTo("b");
    }

    @Test
    void aFullPickGivesWayToANodeWithRoom() {
        Node a = node("a", 1);
        Node b = node("b", 1);
        a.inFlight().increment();
        TableSnapshot t = new TableSnapshot(1, List.of(a, b));
        Route r = select(t, List.of()); // round robin starts at a, which is full
        assertThat(((Route.To) r).node().id()).isEqualTo("b");
        assertThat(b.inFlight().get()).isEqualTo(1);
    }

    @Test
    void unknownCapacityAlwaysHasRoomAndItsLeasesCountInFlight() {
        Node a = node("a", null);
        TableSnapshot t = new TableSnapshot(1, List.of(a));
        List<Route.To> routes = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            Route.To r = (Route.To) select(t, List.of());
            assertThat(r.lease().bounded()).isFalse();
            routes.add(r);
        }
        assertThat(a.inFlight().get()).isEqualTo(100);
        routes.forEach(r -> assertThat(r.lease().release()).as("no slot the queue could use").isFalse());
        routes.forEach(r -> r.lease().release());
        assertThat(a.inFlight().get()).as("each lease given back once").isZero();
        assertThat(a.limit()).isEqualTo(Integer.MAX_VALUE);
        assertThat(a.hasRoom()).isTrue();
    }

    @Test
    void aFullNodeOfKnownCapacitySendsTheRequestToOneOfUnknownCapacity() {
        Node a = node("a", 1);
        Node b = node("b", null);
        a.inFlight().increment();
        Route.To r = (Route.To) select(new TableSnapshot(1, List.of(a, b)), List.of());
        assertThat(r.node().id()).isEqualTo("b");
        assertThat(r.lease().bounded()).isFalse();
    }

    @Test
    void aRetryFindingEveryOtherNodeFullIsToWait() {
        Node a = node("a", 4);
        Node b = node("b", 1);
        b.inFlight().increment();
        assertThat(select(new TableSnapshot(1, List.of(a, b)), List.of("a"))).isSameAs(Route.Refused.FULL);
    }

    @Test
    void whatANodeReportsBeyondThisSchedulersOwnPeakTakesItsSlots() {
        InFlight own = new InFlight();
        own.increment();
        own.increment(); // peak 2
        own.decrement();
        // The node reports 3 running and 2 waiting: 5, of which this scheduler's peak explains 2.
        int others = Node.othersOf(new Load(3, 2, null), own.takePeak());
        assertThat(others).isEqualTo(3);
        Node n = Node.of(hb("n", 4, new Load(3, 2, null)), NOW, own, others);
        assertThat(n.limit()).isEqualTo(1);
        assertThat(n.load()).isEqualTo(4);
        assertThat(n.hasRoom()).isFalse(); // one of ours in flight, the limit is one
        own.decrement();
        assertThat(n.hasRoom()).isTrue();
        // The peak spans two periods (a late heartbeat's sample may predate the last one), and each
        // period starts from the count at its start: 2 in the last one; then 1 (this one's start); then none.
        assertThat(own.takePeak()).isEqualTo(2);
        assertThat(own.takePeak()).isEqualTo(1);
        assertThat(own.takePeak()).isZero();
        assertThat(Node.othersOf(new Load(1, null, null), 2)).isZero();
        assertThat(Node.othersOf(Load.UNKNOWN, 0)).isZero();
    }

    @Test
    void othersBeyondTheCapacityLeaveNoSlot() {
        Node n = Node.of(hb("n", 2, new Load(5, 0, null)), NOW, new InFlight(), 5);
        assertThat(n.limit()).isZero();
        assertThat(select(new TableSnapshot(1, List.of(n)), List.of())).isSameAs(Route.Refused.FULL);
    }

    @Test
    void twoThreadsRacingForTheLastSlotNeverOverbookIt() throws Exception {
        Node a = node("a", 1);
        TableSnapshot t = new TableSnapshot(1, List.of(a));
        RouteSelector shared = new RouteSelector(Strategy.LEAST_CONNECTIONS.create(() -> 0L, 0));
        int rounds = 2000;
        CyclicBarrier start = new CyclicBarrier(2);
        AtomicInteger overbooked = new AtomicInteger();
        AtomicInteger won = new AtomicInteger();
        IntFunction<Runnable> grab = self -> () -> {
            try {
                for (int i = 0; i < rounds; i++) {
                    start.await(10, TimeUnit.SECONDS); // both threads race for the one slot
                    if (shared.select(t, RequestFacts.NONE, List.of(), EjectionView.NONE) instanceof Route.To) {
                        won.incrementAndGet();
                    }
                    start.await(10, TimeUnit.SECONDS); // both have tried
                    if (self == 0) {
                        if (a.inFlight().get() > 1) {
                            overbooked.incrementAndGet();
                        }
                        a.inFlight().decrement(); // the winner's request ends
                    }
                    start.await(10, TimeUnit.SECONDS);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        Thread one = new Thread(grab.apply(0));
        Thread two = new Thread(grab.apply(1));
        one.start();
        two.start();
        one.join(60_000);
        two.join(60_000);
        assertThat(one.isAlive() || two.isAlive()).as("both threads finished").isFalse();
        assertThat(overbooked.get()).isZero();
        assertThat(won.get()).as("exactly one winner per round").isEqualTo(rounds);
    }

    @Test
    void freeSlotsAddEveryNodesRoomAndAreUnboundedWithANodeOfUnknownCapacity() {
        Node a = node("a", 4);
        Node b = node("b", 2);
        a.inFlight().increment();
        b.inFlight().increment();
        b.inFlight().increment();
        b.inFlight().increment(); // one over (its capacity fell): counts as none free, not -1
        assertThat(RouteSelector.freeSlots(new TableSnapshot(1, List.of(a, b)), RequestFacts.NONE, EjectionView.NONE))
                .isEqualTo(new FreeSlots(3, 6));
        assertThat(RouteSelector.freeSlots(new TableSnapshot(2, List.of(a, b, node("c", null))), RequestFacts.NONE,
                EjectionView.NONE)).isEqualTo(FreeSlots.UNBOUNDED);
    }

    @Test
    void freeSlotsCountOnlyTheRoomOthersLeaveThisScheduler() {
        Node shared = Node.of(hb("a", 4, Load.UNKNOWN), NOW, new InFlight(), 3); // 3 of its 4 slots busy elsewhere
        assertThat(RouteSelector.freeSlots(new TableSnapshot(1, List.of(shared, node("b", 4))), RequestFacts.NONE,
                EjectionView.NONE)).isEqualTo(new FreeSlots(5, 5));
    }

    @Test
    void freeSlotsLeaveOutEjectedNodesUnlessEveryOneIs() {
        Node a = node("a", 4);
        Node b = node("b", 4);
        TableSnapshot t = new TableSnapshot(1, List.of(a, b));
        assertThat(RouteSelector.freeSlots(t, RequestFacts.NONE, ejected("b"))).isEqualTo(new FreeSlots(4, 4));
        assertThat(RouteSelector.freeSlots(t, RequestFacts.NONE, ejected("a", "b"))).isEqualTo(new FreeSlots(8, 8));
    }

    private static EjectionView ejected(String... ids) {
        Set<String> out = Set.of(ids);
        return new EjectionView() {
            @Override
            public boolean anyEjected() {
                return true;
            }

            @Override
            public boolean isEjected(String nodeId) {
                return out.contains(nodeId);
            }

            @Override
            public Optional<Ejection> ejection(String nodeId) {
                return Optional.empty();
            }
        };
    }
}
