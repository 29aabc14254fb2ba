package io.heartgate.scheduler.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.time.Ticker;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Sticky until saturated through the route selector: keys stay home at low load and leave at the wait limit. */
class StickyRoutingTest {

    private static final Instant NOW = Instant.parse("2026-12-06T12:00:00Z");
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = Ticker.ofNanos(nanos::get);

    private static Node node(String id, Integer capacity, Double prefillTps) {
        Heartbeat hb = Heartbeat.builder(id, "http://" + id + ":8000").instance("i1").seq(1L).intervalMs(1000)
                .capacity(capacity).models(List.of("m:latest"))
                .load(new Load(null, null, null, null, prefillTps)).build();
        return Node.of(hb, NOW, new InFlight());
    }

    private static TableSnapshot fleet(int n, Integer capacity, Double prefillTps) {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            nodes.add(node("n" + i, capacity, prefillTps));
        }
        return new TableSnapshot(1, nodes);
    }

    private RouteSelector sticky(Duration maxWait) {
        return new RouteSelector(Strategy.sticky(maxWait, Strategy.ROUND_ROBIN, ticker));
    }

    private static RequestFacts turn(String conversation, int bytes) {
        return new RequestFacts("m:latest", true, KeyHash.of(conversation), null, bytes);
    }

    private static Route.To select(RouteSelector s, TableSnapshot t, RequestFacts f) {
        return (Route.To) s.select(t, f, List.of(), EjectionView.NONE);
    }

    /** 4 nodes of 32 slots, 16 conversations of 4 turns each, all 16 in flight at once: no turn leaves home. */
    @Test
    void sixteenConversationsOnFreeSlotsNeverMove() {
        assertThat(moves(sticky(Duration.ofSeconds(1)), fleet(4, 32, null))).isZero();
    }

    /**
     * The case the bounded-load rule gets wrong: with one request in flight its bound is one per node,
     * so a second conversation whose node that is spills though 31 slots are free. Sticky, it stays.
     */
    @Test
    void aSecondConversationOnTheSameNodeStaysWhereTheBoundedRuleSpills() {
        TableSnapshot t = fleet(4, 32, null);
        RouteSelector bounded = new RouteSelector(Strategy.affinity(1.25, Strategy.ROUND_ROBIN));
        Route.To first = select(bounded, t, turn("c0", 1_000));
        String second = null;
        for (int c = 1; second == null; c++) { // a conversation whose ring node is the first one's
            Route.To probe = select(bounded, t, turn("c" + c, 1_000));
            if (probe.affinity().spilledFrom() != null && probe.affinity().spilledFrom().equals(first.node().id())) {
                second = "c" + c;
            }
            probe.lease().release();
        }
        first.lease().release();

        RouteSelector s = sticky(Duration.ofSeconds(1));
        Route.To a = select(s, t, turn("c0", 1_000));
        Route.To b = select(s, t, turn(second, 1_000));
        assertThat(b.node()).isSameAs(a.node());
        assertThat(b.affinity()).isEqualTo(AffinityPick.HIT);
    }

    private static int moves(RouteSelector s, TableSnapshot t) {
        Map<Integer, String> home = new HashMap<>();
        int moved = 0;
        for (int turn = 0; turn < 4; turn++) {
            List<Route.To> inFlight = new ArrayList<>();
            for (int c = 0; c < 16; c++) {
                Route.To r = select(s, t, turn("conversation-" + c, 2_000 * (turn + 1)));
                inFlight.add(r);
                String was = home.putIfAbsent(c, r.node().id());
                if (was != null && !was.equals(r.node().id())) {
                    moved++;
                }
            }
            inFlight.forEach(r -> r.lease().release());
        }
        return moved;
    }

    @Test
    void aSecondConversationOnABusyNodeStaysWhileItHasSlots() {
        TableSnapshot t = fleet(3, 32, null);
        RouteSelector s = sticky(Duration.ofSeconds(1));
        // Many conversations, each sent while every earlier one is still in flight: none leaves home.
        List<Route.To> held = new ArrayList<>();
        for (int c = 0; c < 40; c++) {
            Route.To r = select(s, t, turn("c" + c, 1_000));
            assertThat(r.affinity()).as("conversation %d", c).isEqualTo(AffinityPick.HIT);
            held.add(r);
        }
        held.forEach(r -> r.lease().release());
    }

    @Test
    void aFullHomeSendsTheKeyToTheLeastWaitAndItsNextTurnsStayThere() {
        TableSnapshot t = fleet(4, 1, null);
        RouteSelector s = sticky(Duration.ofSeconds(1));
        Route.To first = select(s, t, turn("talk", 4_000));
        Node home = first.node();
        // Another node is busy prefilling a long prompt: it waits longer than the two idle ones.
        Node busy = t.routable().stream().filter(n -> n != home).findFirst().orElseThrow();
        busy.inFlight().tokens().sent(50_000);

        Route.To spilled = select(s, t, turn("talk", 5_000));
        assertThat(spilled.node()).isNotSameAs(home).isNotSameAs(busy);
        assertThat(spilled.affinity()).isEqualTo(AffinityPick.spill(home.id()));
        first.lease().release();
        spilled.lease().release();

        Route.To next = select(s, t, turn("talk", 6_000));
        assertThat(next.node()).as("the conversation lives where it went").isSameAs(spilled.node());
        assertThat(next.affinity()).isEqualTo(AffinityPick.HIT);
        assertThat(next.lease().prefill()).as("only the new part is uncached there: 1,000 bytes, 250 tokens")
                .isEqualTo(250);
        next.lease().release();
    }

    @Test
    void ofUnknownCapacityAKeyStaysUntilItsHomesBacklogWaitReachesTheLimit() {
        // 1,000 tokens per second reported; 1 s limit: a node holds a key until 1,000 tokens wait there.
        TableSnapshot t = fleet(3, null, 1_000.0);
        RouteSelector s = sticky(Duration.ofSeconds(1));
        Route.To first = select(s, t, turn("agent", 400));
        Node home = first.node();
        first.lease().firstToken(nanos.get(), false);

        home.inFlight().tokens().sent(950); // 0.95 s ahead: under the limit, whatever this turn brings
        Route.To stays = select(s, t, turn("agent", 800));
        assertThat(stays.node()).isSameAs(home);
        assertThat(stays.lease().prefill()).as("only the 400 new bytes are uncached").isEqualTo(100);

        // 1,050 tokens ahead now (its own 100 joined): 1.05 s, past the limit.
        Route.To leaves = select(s, t, turn("agent", 1_200));
        assertThat(leaves.node()).isNotSameAs(home);
        assertThat(leaves.affinity()).isEqualTo(AffinityPick.spill(home.id()));
        assertThat(leaves.lease().prefill()).as("cold there: the whole body").isEqualTo(300);
    }

    @Test
    void aHomeThatWaitsLessThanEveryOtherNodeKeepsTheKeyPastTheLimit() {
        TableSnapshot t = fleet(2, null, 1_000.0);
        RouteSelector s = sticky(Duration.ofMillis(100));
        Route.To first = select(s, t, turn("agent", 400));
        Node home = first.node();
        Node other = t.routable().stream().filter(n -> n != home).findFirst().orElseThrow();
        home.inFlight().tokens().sent(500);
        other.inFlight().tokens().sent(10_000);
        Route.To r = select(s, t, turn("agent", 800));
        assertThat(r.node()).as("0.7 s at home against 10.2 s elsewhere").isSameAs(home);
    }

    @Test
    void aKeyUnseenForAnHourIsPlacedOnTheRingAgain() {
        TableSnapshot t = fleet(4, 1, null);
        RouteSelector s = sticky(Duration.ofSeconds(1));
        Route.To owner = select(s, t, turn("k", 100)); // the ring's node, whose one slot it holds
        Route.To moved = select(s, t, turn("k", 100)); // the owner is full: the key moves
        owner.lease().release();
        moved.lease().release();
        Route.To again = select(s, t, turn("k", 100));
        assertThat(again.node()).isSameAs(moved.node());
        again.lease().release();
        nanos.addAndGet(Duration.ofHours(1).toNanos());
        assertThat(select(s, t, turn("k", 100)).node()).isSameAs(owner.node());
    }

    @Test
    void aFollowUpGoesToTheNodeThatMadeItsResponseAndWaitsForItsSlot() {
        TableSnapshot t = fleet(3, 1, null);
        RouteSelector s = sticky(Duration.ofSeconds(1));
        Node maker = t.routable().get(2);
        RequestFacts followUp = RequestFacts.ofModel("m:latest").withNode(maker.id());
        Route.To r = select(s, t, followUp);
        assertThat(r.node()).isSameAs(maker);
        assertThat(s.select(t, followUp, List.of(), EjectionView.NONE)).as("its one slot is taken")
                .isSameAs(Route.Refused.FULL);
        assertThat(RouteSelector.untriedLeft(t, followUp, List.of(maker.id()))).isFalse();
        r.lease().release();
        assertThat(select(s, t, RequestFacts.ofModel("m:latest").withNode("gone")).node())
                .as("a node no longer listed: routed as any").isNotNull();
    }

    @Test
    void aHomeUnderTheLimitKeepsANewKeyWhateverTheRequestsSize() {
        // 40,000 bytes are 10,000 tokens, ten seconds at the assumed speed: only the backlog ahead counts
        // at home, so half a second of it keeps the key though an idle node would give the first token sooner.
        TableSnapshot t = fleet(3, null, null);
        Route.To probe = select(new RouteSelector(Strategy.affinity(1.25, Strategy.ROUND_ROBIN)), t, turn("big", 10));
        Node owner = probe.node(); // the key's node on the ring, the same ring under both rules
        probe.lease().release();
        owner.inFlight().tokens().sent(500);

        Route.To r = select(sticky(Duration.ofSeconds(1)), t, turn("big", 40_000));
        assertThat(r.node()).isSameAs(owner);
        assertThat(r.affinity()).isEqualTo(AffinityPick.HIT);
    }

    @Test
    void aShorterBodyUnderTheSameKeyIsAnotherConversationAndAllUncached() {
        TableSnapshot t = fleet(2, 8, null);
        RouteSelector s = sticky(Duration.ofSeconds(1));
        select(s, t, turn("shared", 8_000)).lease().release();
        Route.To shorter = select(s, t, turn("shared", 2_000));
        assertThat(shorter.affinity()).isEqualTo(AffinityPick.HIT);
        assertThat(shorter.lease().prefill()).as("not 0: nothing of it is known to be cached").isEqualTo(500);
    }

    @Test
    void aRetryAfterTheHomeFailedIsASpill() {
        TableSnapshot t = fleet(3, 8, null);
        RouteSelector s = sticky(Duration.ofSeconds(1));
        Route.To first = select(s, t, turn("k", 1_000));
        first.lease().release();
        Route.To retry = (Route.To) s.select(t, turn("k", 1_000), List.of(first.node().id()), EjectionView.NONE);
        assertThat(retry.node()).isNotSameAs(first.node());
        assertThat(retry.affinity()).as("its home was set aside for it").isEqualTo(AffinityPick.spill(null));
    }

    @Test
    void aSessionsHomeIsKeptPerModel() {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            nodes.add(node("n" + i, 1, null));
        }
        Node small = Node.of(Heartbeat.builder("s1", "http://s1:8000").instance("i1").seq(1L).intervalMs(1000)
                .capacity(8).models(List.of("small:latest")).build(), NOW, new InFlight());
        nodes.add(small);
        TableSnapshot t = new TableSnapshot(1, nodes);
        RouteSelector s = sticky(Duration.ofSeconds(1));
        Route.To held = select(s, t, turn("session", 1_000));
        Route.To moved = select(s, t, turn("session", 2_000)); // its ring node full: the home moves
        held.lease().release();
        moved.lease().release();
        Route.To side = select(s, t, new RequestFacts("small:latest", true, KeyHash.of("session"), null, 500));
        assertThat(side.node()).isSameAs(small);
        side.lease().release();
        assertThat(select(s, t, turn("session", 3_000)).node()).as("the main model's home is still there")
                .isSameAs(moved.node());
    }
}
