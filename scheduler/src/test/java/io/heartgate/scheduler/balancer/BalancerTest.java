package io.heartgate.scheduler.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.scheduler.Beats;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class BalancerTest {

    private static Node node(Heartbeat hb) {
        return Node.of(hb, Instant.parse("2026-11-30T16:00:00Z"), new InFlight());
    }

    private static Node node(String id, int weight) {
        return node(Beats.weighted(id, weight));
    }

    private static Balancer seeded(Strategy s) {
        return s.create(new Random(42), 0);
    }

    /** Picks {@code n} times with a snapshot's picker over {@code nodes}, as routing does for a model's whole list. */
    private static String picks(Balancer b, List<Node> nodes, int n) {
        Picker p = b.over(nodes);
        return IntStream.range(0, n).mapToObj(i -> p.pick(nodes).id()).collect(Collectors.joining(" "));
    }

    /** Picks {@code n} times among {@code nodes} as a list made for one request. */
    private static String adHoc(Balancer b, List<Node> nodes, int n) {
        return IntStream.range(0, n).mapToObj(i -> b.pick(nodes).orElseThrow().id()).collect(Collectors.joining(" "));
    }

    // ---- contracts every strategy shares -------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void emptyCandidatesGiveEmpty(Strategy s) {
        assertThat(seeded(s).pick(List.of())).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void aSingleCandidateIsAlwaysPicked(Strategy s) {
        Balancer b = seeded(s);
        List<Node> one = List.of(node("only", 7));
        assertThat(picks(b, one, 20)).isEqualTo(String.join(" ", Collections.nCopies(20, "only")));
    }

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void neverPicksOutsideTheCandidates(Strategy s) {
        Balancer b = seeded(s);
        List<Node> nodes = List.of(node("a", 1), node("b", 3), node("c", 2));
        for (int i = 0; i < 1000; i++) {
            assertThat(nodes).contains(b.pick(nodes).orElseThrow());
        }
    }

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void survivesConcurrentPicksAndTableChanges(Strategy s) throws Exception {
        Balancer b = s.create();
        List<List<Node>> tables = List.of(
                List.of(node("a", 1), node("b", 2), node("c", 3)),
                List.of(node("a", 1), node("c", 3)),
                List.of(node("b", 5), node("d", 1), node("e", 1), node("f", 2)));
        ExecutorService pool = Executors.newFixedThreadPool(4);
        CountDownLatch done = new CountDownLatch(4);
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < 4; t++) {
            pool.execute(() -> {
                try {
                    for (int i = 0; i < 20_000; i++) {
                        List<Node> nodes = tables.get(i % tables.size());
                        Node picked = i % 2 == 0 ? b.pick(nodes).orElseThrow() : b.over(nodes).pick(nodes);
                        if (!nodes.contains(picked)) {
                            throw new AssertionError(picked.id() + " is not a candidate");
                        }
                    }
                } catch (Throwable e) {
                    errors.add(e);
                } finally {
                    done.countDown();
                }
            });
        }
        assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
        pool.shutdown();
        assertThat(errors).isEmpty();
    }

    // ---- exact sequences -------------------------------------------------------------------------

    @Test
    void roundRobinGoesInNodeIdOrder() {
        List<Node> nodes = List.of(node("a", 1), node("b", 9), node("c", 1));
        assertThat(picks(seeded(Strategy.ROUND_ROBIN), nodes, 7)).isEqualTo("a b c a b c a");
    }

    /**
     * Pins the picks across the counter's wrap from {@code Long.MAX_VALUE} to {@code Long.MIN_VALUE}:
     * the index is {@code Math.floorMod(counter, 3)}, and since both MAX_VALUE (2^63 - 1) and
     * MIN_VALUE (-2^63) are 1 modulo 3, b is picked twice in a row at the wrap, once in 2^64 picks:
     * counters MAX-3 .. MAX give b c a b, then MIN .. MIN+3 give b c a b. Never an exception or a
     * negative index.
     */
    @Test
    void roundRobinSurvivesCounterOverflow() {
        Balancer b = Strategy.ROUND_ROBIN.create(new Random(1), Long.MAX_VALUE - 3);
        List<Node> nodes = List.of(node("a", 1), node("b", 1), node("c", 1));
        assertThat(picks(b, nodes, 8)).isEqualTo("b c a b b c a b");
    }

    @Test
    void weightedFollowsNginxSmoothSequenceFor5_1_1() {
        List<Node> nodes = List.of(node("a", 5), node("b", 1), node("c", 1));
        Balancer b = seeded(Strategy.WEIGHTED);
        for (int round = 0; round < 3; round++) {
            assertThat(picks(b, nodes, 7)).isEqualTo("a a b a c a a");
        }
    }

    @Test
    void weightedFollowsNginxSmoothSequenceFor1_2_5() {
        List<Node> nodes = List.of(node("a", 1), node("b", 2), node("c", 5));
        Balancer b = seeded(Strategy.WEIGHTED);
        for (int round = 0; round < 3; round++) {
            assertThat(picks(b, nodes, 8)).isEqualTo("c b c a c c b c");
        }
    }

    @Test
    void weightedAmongAListMadeForOneRequestKeepsTheProportionsWithoutState() {
        List<Node> nodes = List.of(node("a", 1), node("b", 2), node("c", 3));
        Balancer b = seeded(Strategy.WEIGHTED);
        String seq = adHoc(b, nodes, 600).replace(" ", "");
        assertThat(seq.chars().filter(c -> c == 'a').count()).isEqualTo(100);
        assertThat(seq.chars().filter(c -> c == 'b').count()).isEqualTo(200);
        assertThat(seq.chars().filter(c -> c == 'c').count()).isEqualTo(300);
    }

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void aPickerAndAPickAmongTheSameListChooseFromTheSameNodes(Strategy s) {
        List<Node> nodes = List.of(node("a", 1), node("b", 3), node("c", 2));
        Balancer b = seeded(s);
        Picker p = b.over(nodes);
        for (int i = 0; i < 200; i++) {
            assertThat(nodes).contains(p.pick(nodes), b.pick(nodes).orElseThrow());
        }
    }

    @Test
    void weightedKeepsStateByNodeIdAcrossTableChanges() {
        Balancer b = seeded(Strategy.WEIGHTED);
        List<Node> first = List.of(node("a", 5), node("b", 1), node("c", 1));
        assertThat(picks(b, first, 3)).isEqualTo("a a b");
        // A new snapshot with equal content (new list, new node objects): the sequence continues.
        List<Node> second = List.of(node("a", 5), node("b", 1), node("c", 1));
        assertThat(picks(b, second, 4)).isEqualTo("a c a a");
    }

    @Test
    void weightedLosesNoStateWhenSnapshotsAlternate() {
        // Regression: with several cached lists, writing back a stale one last rewound the rotation.
        Balancer b = seeded(Strategy.WEIGHTED);
        StringBuilder seq = new StringBuilder();
        for (int round = 0; round < 15; round++) {
            List<Node> snapshot = List.of(node("a", 1), node("b", 2), node("c", 3)); // a new list each "publish"
            Picker p = b.over(snapshot); // each snapshot's own picker
            for (int i = 0; i < 4; i++) { // not a whole cycle of 6: state carries over between lists
                seq.append(p.pick(snapshot).id());
            }
        }
        Map<Character, Long> counts = seq.chars().mapToObj(c -> (char) c)
                .collect(Collectors.groupingBy(c -> c, Collectors.counting()));
        assertThat(counts).containsEntry('a', 10L).containsEntry('b', 20L).containsEntry('c', 30L);
    }

    @Test
    void leastConnectionsPrefersFewestInFlightRelativeToWeight() {
        Node a = node("a", 1);
        Node b = node("b", 2);
        Node c = node("c", 1);
        a.inFlight().increment();
        b.inFlight().increment();
        b.inFlight().increment();
        b.inFlight().increment(); // b: 3 of weight 2 = 1.5; a: 1; c: 0
        Balancer lc = seeded(Strategy.LEAST_CONNECTIONS);

        assertThat(lc.pick(List.of(a, b, c))).contains(c);
        c.inFlight().increment();
        c.inFlight().increment(); // c: 2
        assertThat(lc.pick(List.of(a, b, c))).contains(a);
    }

    @Test
    void leastConnectionsRotatesAmongTies() {
        List<Node> nodes = List.of(node("a", 1), node("b", 1), node("c", 1));
        assertThat(picks(seeded(Strategy.LEAST_CONNECTIONS), nodes, 6)).isEqualTo("a b c a b c");
    }

    /** A node as the table builds it: what its heartbeat reports beyond this scheduler's own peak (0) is others' work. */
    private static Node reported(Heartbeat hb) {
        return Node.of(hb, Instant.parse("2026-11-30T16:00:00Z"), new InFlight(), Node.othersOf(hb.load(), 0));
    }

    @Test
    void leastLoadedComparesEveryCandidateWhenFewSoTheOneFreeNodeIsNeverMissed() {
        Node idle = reported(Beats.of("idle").weight(1).build());
        Node busy = reported(Beats.of("busy").weight(1).load(new Load(4, 10, 0.9)).build());
        Node busier = reported(Beats.of("busier").weight(1).load(new Load(4, 12, 0.9)).build());
        Balancer b = seeded(Strategy.LEAST_LOADED);

        for (int i = 0; i < 100; i++) {
            // Power of two choices would draw {busy, busier} a third of the time.
            assertThat(b.pick(List.of(busy, busier, idle))).contains(idle);
        }
    }

    @Test
    void leastLoadedRotatesAmongTies() {
        List<Node> nodes = List.of(node("a", 1), node("b", 1), node("c", 1));
        assertThat(picks(seeded(Strategy.LEAST_LOADED), nodes, 6)).isEqualTo("a b c a b c");
    }

    @Test
    void leastLoadedSamplesTwoWhenThereAreMany() {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < LeastLoadedBalancer.SCAN_UP_TO + 1; i++) {
            nodes.add(reported(Beats.of("n" + i).weight(1).load(new Load(i == 0 ? 0 : 5, 0, null)).build()));
        }
        Map<String, Integer> counts = count(seeded(Strategy.LEAST_LOADED), nodes, 1000, 0);
        // The one idle node wins only when drawn: about 2/33 of picks, far from all of them.
        assertThat(counts.getOrDefault("n0", 0)).isBetween(20, 120);
    }

    @Test
    void leastLoadedScoresLoadAgainstWeightAndCapacity() {
        Node big = reported(Beats.of("big").weight(4).load(new Load(4, 0, 0.0)).build());
        Node small = reported(Beats.of("small").weight(1).load(new Load(1, 0, 0.0)).build());
        assertThat(LeastLoadedBalancer.score(big)).isEqualTo(5.0 / 4);
        assertThat(LeastLoadedBalancer.score(small)).isEqualTo(2.0);

        Node full = reported(Beats.of("full").weight(1).load(new Load(0, 0, 1.0)).build());
        assertThat(LeastLoadedBalancer.score(full)).isEqualTo(2.0);
        full.inFlight().increment();
        full.inFlight().increment();
        assertThat(LeastLoadedBalancer.score(full)).isEqualTo(6.0);

        // Eight slots with four busy beat four slots with three: (4 + 1) / 8 < (3 + 1) / 4.
        Node wide = reported(Beats.of("wide").weight(1).capacity(8).load(new Load(3, 1, null)).build());
        Node narrow = reported(Beats.of("narrow").weight(1).capacity(4).load(new Load(3, 0, null)).build());
        assertThat(LeastLoadedBalancer.score(wide)).isEqualTo(5.0 / 8);
        assertThat(LeastLoadedBalancer.score(narrow)).isEqualTo(1.0);
        assertThat(seeded(Strategy.LEAST_LOADED).pick(List.of(narrow, wide))).contains(wide);
    }

    // ---- shares over 10,000 picks ---------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(value = Strategy.class, names = {"RANDOM", "ROUND_ROBIN", "WEIGHTED"})
    void sharesOver10000PicksMatchTheDefinitionWithin2Percent(Strategy s) {
        List<Node> nodes = List.of(node("a", 1), node("b", 2), node("c", 5), node("d", 2));
        Map<String, Integer> counts = count(seeded(s), nodes, 10_000, 0);
        int totalWeight = nodes.stream().mapToInt(Node::weight).sum();
        for (Node n : nodes) {
            // random: uniform; round-robin: equal; weighted: proportional to weight
            double expected = s == Strategy.WEIGHTED ? (double) n.weight() / totalWeight : 1.0 / nodes.size();
            assertShare(s, counts, n, expected);
        }
    }

    @Test
    void leastConnectionsSharesFollowWeightUnderSteadyLoad() {
        // 64 requests always in flight, each finishing in the order it started: least-connections
        // keeps in-flight counts proportional to weight, so picks are proportional to weight too.
        List<Node> nodes = List.of(node("a", 1), node("b", 2), node("c", 5), node("d", 2));
        Map<String, Integer> counts = count(seeded(Strategy.LEAST_CONNECTIONS), nodes, 10_000, 64);
        for (Node n : nodes) {
            assertShare(Strategy.LEAST_CONNECTIONS, counts, n, n.weight() / 10.0);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Strategy.class, names = {"LEAST_CONNECTIONS", "LEAST_LOADED"})
    void loadAwareSharesAreEqualForEqualNodes(Strategy s) {
        List<Node> nodes = List.of(node("a", 3), node("b", 3), node("c", 3), node("d", 3));
        for (int inFlight : new int[] {0, 64}) {
            Map<String, Integer> counts = count(seeded(s), List.copyOf(nodes), 10_000, inFlight);
            for (Node n : nodes) {
                assertShare(s, counts, n, 0.25);
            }
        }
    }

    // ---- large lists: picks bounded in cost, shares as defined -----------------------------------

    /** {@code n} nodes of weights 1 to 5 in turn: more than any scan or window of a pick reads. */
    private static List<Node> fleet(int n) {
        return IntStream.range(0, n).mapToObj(i -> node(String.format("n%06d", i), i % 5 + 1)).toList();
    }

    /** Returns each weight's share of {@code picks}, by the weight of the node picked. */
    private static Map<Integer, Double> sharesByWeight(List<Node> picks) {
        Map<Integer, Double> shares = new HashMap<>();
        picks.forEach(n -> shares.merge(n.weight(), 1.0 / picks.size(), Double::sum));
        return shares;
    }

    @ParameterizedTest
    @EnumSource(value = Strategy.class, names = {"RANDOM", "ROUND_ROBIN", "WEIGHTED"})
    void largeListsKeepTheSharesOfTheDefinitionWithin2Percent(Strategy s) {
        List<Node> nodes = fleet(10_000); // 2,000 nodes of each weight, 30,000 in all
        Balancer b = seeded(s);
        Picker p = b.over(nodes);
        List<Node> byPicker = IntStream.range(0, 10_000).mapToObj(i -> p.pick(nodes)).toList();
        List<Node> byList = IntStream.range(0, 10_000).mapToObj(i -> b.pick(nodes).orElseThrow()).toList();
        for (List<Node> picks : List.of(byPicker, byList)) {
            Map<Integer, Double> shares = sharesByWeight(picks);
            for (int w = 1; w <= 5; w++) {
                double expected = s == Strategy.WEIGHTED ? w / 15.0 : 0.2;
                assertThat(shares.getOrDefault(w, 0.0)).as("%s share of weight %d", s.label(), w)
                        .isCloseTo(expected, Offset.offset(0.02));
            }
        }
    }

    @Test
    void leastConnectionsOverALargeBusyFleetKeepsLoadProportionalToWeight() {
        // Every node busy (three requests per unit of weight, none free: every pick reads its whole
        // window); each pick adds a request and the oldest one finishes. Once that has gone on for
        // a while, the picks replace what finishes, so they follow the weights, and no node drifts
        // far from the common ratio.
        List<Node> nodes = fleet(10_000);
        List<Node> held = new ArrayList<>();
        nodes.forEach(n -> IntStream.range(0, 3 * n.weight()).forEach(i -> held.add(n)));
        Collections.shuffle(held, new Random(3));
        ArrayDeque<Node> fifo = new ArrayDeque<>(held);
        fifo.forEach(n -> n.inFlight().increment());
        Balancer b = seeded(Strategy.LEAST_CONNECTIONS);
        for (boolean byPicker : new boolean[] {true, false}) {
            Picker p = b.over(nodes);
            List<Node> picks = new ArrayList<>();
            for (int i = 0; i < 20_000; i++) {
                Node picked = byPicker ? p.pick(nodes) : b.pick(nodes).orElseThrow();
                if (i >= 10_000) {
                    picks.add(picked);
                }
                picked.inFlight().increment();
                fifo.addLast(picked);
                fifo.removeFirst().inFlight().decrement();
            }
            Map<Integer, Double> shares = sharesByWeight(picks);
            for (int w = 1; w <= 5; w++) {
                assertThat(shares.getOrDefault(w, 0.0)).as("share of weight %d", w)
                        .isCloseTo(w / 15.0, Offset.offset(0.02));
            }
            double most = nodes.stream().mapToDouble(n -> (double) n.inFlight().get() / n.weight()).max().orElseThrow();
            assertThat(most).as("the busiest node's requests per unit of weight").isLessThanOrEqualTo(4.0);
        }
    }

    @Test
    void weightedWindowsOverAListJustLongerThanOneShareItEvenly() {
        List<Node> nodes = IntStream.range(0, 2_049).mapToObj(i -> node(String.format("n%05d", i), 1)).toList();
        Balancer b = seeded(Strategy.WEIGHTED);
        Map<String, Integer> counts = new HashMap<>();
        for (int i = 0; i < 20_490; i++) {
            counts.merge(b.pick(nodes).orElseThrow().id(), 1, Integer::sum);
        }
        assertThat(counts).hasSize(2_049);
        assertThat(counts.values()).allSatisfy(c -> assertThat(c).as("picks of one node of 2,049 (windows of 1,024 and 1,025)").isBetween(9, 11));
    }

    @Test
    void leastConnectionsStopsAtAFreeNodeAndPicksWhatAFullScanWould() {
        List<Node> nodes = fleet(10_000);
        nodes.forEach(n -> n.inFlight().increment());
        nodes.get(7_000).inFlight().decrement();
        nodes.get(7_001).inFlight().decrement();
        Balancer b = Strategy.LEAST_CONNECTIONS.create(new Random(1), 6_000);
        // From 6,000 the window reaches 7,000: the first free node there, as a full scan picks it.
        assertThat(b.over(nodes).pick(nodes)).isSameAs(nodes.get(7_000));
        assertThat(b.pick(nodes)).containsSame(nodes.get(7_000));
    }

    /** Picks {@code picks} times keeping {@code concurrency} requests in flight (0: none), FIFO completion. */
    private static Map<String, Integer> count(Balancer b, List<Node> nodes, int picks, int concurrency) {
        Map<String, Integer> counts = new HashMap<>();
        ArrayDeque<Node> inFlight = new ArrayDeque<>();
        for (int i = 0; i < picks; i++) {
            Node picked = b.pick(nodes).orElseThrow();
            counts.merge(picked.id(), 1, Integer::sum);
            if (concurrency > 0) {
                picked.inFlight().increment();
                inFlight.addLast(picked);
                if (inFlight.size() >= concurrency) {
                    inFlight.removeFirst().inFlight().decrement();
                }
            }
        }
        inFlight.forEach(n -> n.inFlight().decrement());
        return counts;
    }

    private static void assertShare(Strategy s, Map<String, Integer> counts, Node n, double expected) {
        double share = counts.getOrDefault(n.id(), 0) / 10_000.0;
        assertThat(share).as("%s share of %s", s.label(), n.id())
                .isCloseTo(expected, Offset.offset(0.02));
    }

    @Test
    void parsesCommandLineNames() {
        assertThat(Strategy.parse("least-connections")).isEqualTo(Strategy.LEAST_CONNECTIONS);
        assertThat(Strategy.parse(" Weighted ")).isEqualTo(Strategy.WEIGHTED);
        assertThatThrownBy(() -> Strategy.parse("fastest")).hasMessageContaining("round-robin");
    }
}
