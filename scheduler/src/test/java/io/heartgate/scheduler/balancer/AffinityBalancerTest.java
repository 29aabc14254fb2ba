package io.heartgate.scheduler.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.Beats;
import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Consistent hashing with bounded loads on plain snapshots: lists of nodes with counters the tests set. */
class AffinityBalancerTest {

    private static final int KEYS = 10_000;
    /** One counter per node id, shared by every "snapshot" of that node, as the table keeps them. */
    private final Map<String, InFlight> counters = new HashMap<>();

    private Node node(String id, int weight) {
        return Node.of(Beats.weighted(id, weight), Instant.parse("2026-12-01T12:00:00Z"),
                counters.computeIfAbsent(id, k -> new InFlight()));
    }

    /** A snapshot's candidate list: nodes n0..n(count-1) (sorted by id, as the table lists them), fresh objects each call. */
    private List<Node> fleet(int count) {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            nodes.add(node(String.format("n%03d", i), 1));
        }
        return List.copyOf(nodes);
    }

    private static long key(int i) {
        return KeyHash.of("conversation-" + i);
    }

    private static AffinityBalancer balancer() {
        return new AffinityBalancer(1.25, Strategy.ROUND_ROBIN.create());
    }

    private static String[] owners(AffinityBalancer b, List<Node> nodes) {
        String[] out = new String[KEYS];
        for (int i = 0; i < KEYS; i++) {
            out[i] = b.pick(nodes, nodes, key(i)).node().id();
        }
        return out;
    }

    @Test
    void theSameKeyPicksTheSameNodeAcrossSnapshotsThatKeepIt() {
        AffinityBalancer b = balancer();
        String[] first = owners(b, fleet(8));
        for (int snapshot = 0; snapshot < 5; snapshot++) {
            assertThat(owners(b, fleet(8))).as("snapshot %d", snapshot).isEqualTo(first);
        }
        assertThat(owners(balancer(), fleet(8))).as("another replica, its own rings").isEqualTo(first);
        assertThat(new HashSet<>(List.of(first))).as("every node owns keys").hasSize(8);
    }

    @Test
    void aKeyMovesOnlyWhenItsNodeLeaves() {
        AffinityBalancer b = balancer();
        List<Node> all = fleet(8);
        String[] was = owners(b, all);
        List<Node> less = new ArrayList<>(all);
        String gone = less.remove(3).id();
        String[] is = owners(b, List.copyOf(less));
        for (int i = 0; i < KEYS; i++) {
            if (!was[i].equals(gone)) {
                assertThat(is[i]).as("key %d of a node that stayed", i).isEqualTo(was[i]);
            } else {
                assertThat(is[i]).isNotEqualTo(gone);
            }
        }
    }

    @Test
    void aKeyMovesOnlyWhenItsNodeIsAtItsBoundAndComesBackAfter() {
        AffinityBalancer b = balancer();
        List<Node> nodes = fleet(8);
        String[] was = owners(b, nodes);
        // n002 has 10 of 10 requests in flight: bound ceil(1.25 x 11 / 8) = 2, so its keys spill; the others' stay.
        counters.get("n002").increment();
        for (int i = 1; i < 10; i++) {
            counters.get("n002").increment();
        }
        for (int i = 0; i < KEYS; i++) {
            AffinityBalancer.Choice c = b.pick(nodes, nodes, key(i));
            if (was[i].equals("n002")) {
                assertThat(c.node().id()).isNotEqualTo("n002");
                assertThat(c.owner().id()).isEqualTo("n002");
                assertThat(c.passedOver()).isTrue();
                assertThat(c.hit()).isFalse();
            } else {
                assertThat(c.node().id()).as("key %d", i).isEqualTo(was[i]);
                assertThat(c.hit()).isTrue();
            }
        }
        for (int i = 0; i < 10; i++) {
            counters.get("n002").decrement();
        }
        assertThat(owners(b, nodes)).isEqualTo(was);
    }

    /**
     * Only the keys the new node takes move, none between the old nodes, and about its share of them:
     * {@code 1/(N+1)} less at most four standard deviations of that share (the spread of a node's 256
     * points per weight around its due, and of drawing 10,000 keys) and at most 5 points more.
     */
    @ParameterizedTest
    @ValueSource(ints = {3, 4, 8, 10, 16, 32, 64, 100})
    void addingOneOfNNodesMovesItsShareOfKeysAndEveryMovedKeyToIt(int n) {
        AffinityBalancer b = balancer();
        String[] was = owners(b, fleet(n));
        List<Node> after = fleet(n + 1);
        String[] is = owners(b, after);
        String joined = after.get(n).id();
        int moved = 0;
        for (int i = 0; i < KEYS; i++) {
            if (!was[i].equals(is[i])) {
                moved++;
                assertThat(is[i]).as("key %d moved between old nodes", i).isEqualTo(joined);
            }
        }
        double due = 1.0 / (n + 1);
        double sigma = Math.sqrt(Math.pow(due / Math.sqrt(HashRing.POINTS_PER_WEIGHT), 2) + due * (1 - due) / KEYS);
        assertThat((double) moved / KEYS).isBetween(due - 4 * sigma, due + 0.05);
    }

    @Test
    void underABurstOfOneKeyNoNodeEverExceedsTheBound() {
        AffinityBalancer b = balancer();
        List<Node> nodes = fleet(10);
        long hot = key(7);
        String own = b.pick(nodes, nodes, hot).node().id();
        int total = 0;
        for (int request = 0; request < 1_000; request++) {
            AffinityBalancer.Choice c = b.pick(nodes, nodes, hot);
            c.node().inFlight().increment();
            total++;
            long bound = (long) Math.ceil(1.25 * total / nodes.size());
            for (Node x : nodes) {
                assertThat((long) x.inFlight().get()).as("%s after %d requests", x.id(), total).isLessThanOrEqualTo(bound);
            }
            assertThat(c.owner().id()).isEqualTo(own);
        }
        assertThat(counters.get(own).get()).as("the key's own node is filled to its bound").isEqualTo(125);
    }

    @Test
    void keysFollowWeights() {
        AffinityBalancer b = balancer();
        List<Node> nodes = List.of(node("a", 1), node("b", 1), node("c", 2));
        Map<String, Integer> count = new HashMap<>();
        for (String o : owners(b, nodes)) {
            count.merge(o, 1, Integer::sum);
        }
        assertThat(count.get("c") / (double) KEYS).isBetween(0.44, 0.56);
        assertThat(count.get("a") / (double) KEYS).isBetween(0.19, 0.31);
    }

    @Test
    void nodesSetAsideArePassedOverAndEveryOtherKeyKeepsItsNode() {
        AffinityBalancer b = balancer();
        List<Node> nodes = fleet(6);
        String[] was = owners(b, nodes);
        List<Node> allowed = nodes.stream().filter(x -> !x.id().equals("n004")).toList(); // tried, or ejected
        for (int i = 0; i < KEYS; i++) {
            AffinityBalancer.Choice c = b.pick(nodes, allowed, key(i));
            if (was[i].equals("n004")) {
                assertThat(c.node().id()).isNotEqualTo("n004");
                assertThat(c.owner().id()).as("still the key's own node").isEqualTo("n004");
                assertThat(c.hit()).isFalse();
                assertThat(c.passedOver()).as("set aside, not over its bound").isFalse();
            } else {
                assertThat(c.node().id()).isEqualTo(was[i]);
                assertThat(c.hit()).isTrue();
            }
        }
    }

    @Test
    void aNodeAtCapacityIsPassedOverLikeOneAtItsBound() {
        AffinityBalancer b = balancer();
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            String id = "c" + i;
            nodes.add(Node.of(Beats.of(id).capacity(1).build(), Instant.parse("2026-12-01T12:00:00Z"),
                    counters.computeIfAbsent(id, k -> new InFlight())));
        }
        long k = key(1);
        Node own = b.pick(nodes, nodes, k).node();
        own.inFlight().increment(); // its one slot taken
        AffinityBalancer.Choice c = b.pick(nodes, nodes, k);
        assertThat(c.node()).isNotSameAs(own);
        assertThat(c.owner()).isSameAs(own);
        assertThat(c.passedOver()).isTrue();
    }

    @Test
    void whenEveryNodeWithRoomIsAtItsBoundTheLeastBusyOfThemTakesTheKeyRatherThanAQueue() {
        AffinityBalancer b = balancer();
        Node small = Node.of(Beats.of("small").capacity(1).build(), Instant.parse("2026-12-01T12:00:00Z"),
                counters.computeIfAbsent("small", k -> new InFlight()));
        Node big = Node.of(Beats.of("big").capacity(10).build(), Instant.parse("2026-12-01T12:00:00Z"),
                counters.computeIfAbsent("big", k -> new InFlight()));
        List<Node> nodes = List.of(big, small);
        small.inFlight().increment(); // full
        for (int i = 0; i < 5; i++) {
            big.inFlight().increment(); // 5 of 10: at its bound ceil(1.25 x 7 / 2) = 5
        }
        for (int i = 0; i < 200; i++) {
            AffinityBalancer.Choice c = b.pick(nodes, nodes, key(i));
            assertThat(c.node()).as("key %d", i).isSameAs(big);
        }
    }

    @Test
    void aNodesBoundFollowsItsWeight() {
        AffinityBalancer b = balancer();
        List<Node> nodes = List.of(node("heavy", 3), node("light", 1));
        // 8 in flight in all: bounds ceil(1.25 x 9 x 3/4) = 9 and ceil(1.25 x 9 x 1/4) = 3.
        for (int i = 0; i < 6; i++) {
            counters.get("heavy").increment();
        }
        counters.get("light").increment();
        counters.get("light").increment();
        int toHeavy = 0;
        for (int i = 0; i < 2_000; i++) {
            AffinityBalancer.Choice c = b.pick(nodes, nodes, key(i));
            if (c.owner().id().equals("heavy")) {
                assertThat(c.hit()).as("6 of its 9").isTrue();
                toHeavy++;
            } else {
                assertThat(c.hit()).as("2 of its 3").isTrue();
            }
        }
        counters.get("light").increment();
        counters.get("light").increment(); // 4 of 10 in all: at its bound ceil(1.25 x 11 / 4) = 4
        for (int i = 0; i < 2_000; i++) {
            assertThat(b.pick(nodes, nodes, key(i)).node().id()).isEqualTo("heavy");
        }
        assertThat(toHeavy / 2_000.0).isBetween(0.68, 0.82);
    }

    @Test
    void theBoundCountsOnlyTheNodesAllowed() {
        AffinityBalancer b = balancer();
        List<Node> nodes = fleet(4);
        List<Node> two = List.of(nodes.get(0), nodes.get(1));
        counters.get("n000").increment();
        counters.get("n000").increment();
        counters.get("n001").increment();
        // 3 in flight on the 2 allowed: bound ceil(1.25 x 4 / 2) = 3, so n000 (2) keeps its keys;
        // counted over all 4 nodes it would be ceil(1.25 x 4 / 4) = 2, and n000 would pass them on.
        int toFirst = 0;
        for (int i = 0; i < 500; i++) {
            AffinityBalancer.Choice c = b.pick(nodes, two, key(i));
            assertThat(c.node().id()).isIn("n000", "n001");
            toFirst += c.node().id().equals("n000") ? 1 : 0;
        }
        assertThat(toFirst).isGreaterThan(100);
    }

    @Test
    void aLargeRingSumsItsCountsAtMostOnceAMillisecondASmallOneEveryTime() {
        HashRing small = new HashRing(fleet(HashRing.EXACT_UP_TO));
        counters.get("n000").increment();
        assertThat(small.totalInFlight(0)).isEqualTo(1);
        counters.get("n001").increment();
        assertThat(small.totalInFlight(0)).isEqualTo(2);
        List<Node> many = new ArrayList<>();
        for (int i = 0; i < HashRing.EXACT_UP_TO + 1; i++) {
            many.add(node("big-" + i, 1));
        }
        HashRing large = new HashRing(many);
        assertThat(large.totalInFlight(0)).isZero();
        counters.get("big-7").increment();
        assertThat(large.totalInFlight(HashRing.REFRESH_NANOS - 1)).as("the sum of a moment ago").isZero();
        assertThat(large.totalInFlight(HashRing.REFRESH_NANOS)).isEqualTo(1);
    }

    @Test
    void aRingIsBuiltOncePerMembershipNotPerSnapshot() {
        AffinityBalancer b = balancer();
        HashRing first = b.ring(fleet(5));
        assertThat(b.ring(fleet(5))).isSameAs(first);
        assertThat(b.ring(fleet(6))).isNotSameAs(first);
    }

    @Test
    void requestsWithoutAKeyGoToTheFallback() {
        AffinityBalancer b = new AffinityBalancer(1.25, Strategy.ROUND_ROBIN.create());
        List<Node> nodes = fleet(3);
        List<String> ids = IntStream.range(0, 3).mapToObj(i -> b.pick(nodes).orElseThrow().id()).toList();
        assertThat(ids).containsExactly("n000", "n001", "n002");
    }

    @Test
    void theLoadFactorIsChecked() {
        assertThatThrownBy(() -> new AffinityBalancer(0.9, Strategy.ROUND_ROBIN.create()))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("1 to 100");
        assertThatThrownBy(() -> Strategy.affinity(1.25, Strategy.AFFINITY))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("another strategy");
    }
}
