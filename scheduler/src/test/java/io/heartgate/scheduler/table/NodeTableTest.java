package io.heartgate.scheduler.table;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.Beats;
import io.heartgate.testkit.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class NodeTableTest {

    private final MutableClock clock = new MutableClock();
    private final NodeTable table = new NodeTable(clock, 3, Duration.ZERO);

    private NodeTable.Outcome apply(Heartbeat hb) {
        NodeTable.Outcome o = table.apply(hb, clock.instant());
        table.publishIfDue();
        return o;
    }

    private List<String> ids() {
        return table.snapshot().nodes().stream().map(Node::id).toList();
    }

    @Test
    void listsNodesInIdOrderAndPublishesImmutableSnapshots() {
        apply(Beats.of("c").build());
        apply(Beats.of("a").build());
        TableSnapshot before = table.snapshot();
        apply(Beats.of("b").build());

        assertThat(ids()).containsExactly("a", "b", "c");
        assertThat(before.nodes()).extracting(Node::id).containsExactly("a", "c");
        assertThat(table.snapshot().version()).isGreaterThan(before.version());
    }

    @Test
    void nothingExpiresBeforeTheTopicIsKnownReadAtAll() {
        apply(Beats.of("a").intervalMs(200).build());
        clock.advance(Duration.ofSeconds(10));
        // A scheduler starting: records applied, the topic not yet known read to any time.
        assertThat(table.expire(Instant.MIN)).isEmpty();
        assertThat(table.expire(clock.instant())).containsExactly("a");
    }

    @Test
    void expiresEachNodeAfterItsOwnMissedIntervals() {
        apply(Beats.of("fast").intervalMs(200).build());
        apply(Beats.of("slow").intervalMs(2000).build());

        clock.advance(Duration.ofMillis(599));
        assertThat(table.expire()).isEmpty();
        clock.advance(Duration.ofMillis(1));
        assertThat(table.expire()).containsExactly("fast");
        table.publishIfDue();
        assertThat(ids()).containsExactly("slow");

        clock.advance(Duration.ofMillis(5399));
        assertThat(table.expire()).isEmpty();
        clock.advance(Duration.ofMillis(1));
        assertThat(table.expire()).containsExactly("slow");
    }

    @Test
    void aRenewalPushesExpiryBack() {
        apply(Beats.of("a").seq(1L).build());
        clock.advance(Duration.ofMillis(2500));
        assertThat(apply(Beats.of("a").seq(2L).build())).isEqualTo(NodeTable.Outcome.RENEWED);
        clock.advance(Duration.ofMillis(2500));

        assertThat(table.expire()).isEmpty();
        assertThat(table.snapshot().node("a").lastSeen()).isEqualTo(clock.instant().minusMillis(2500));
    }

    @Test
    void judgesLivenessByBrokerTimeCappedAtNow() {
        Instant future = clock.instant().plusSeconds(3600);
        table.apply(Beats.of("a").build(), future);
        table.publishIfDue();

        assertThat(table.snapshot().node("a").lastSeen()).isEqualTo(clock.instant());
        clock.advance(Duration.ofSeconds(3));
        assertThat(table.expire()).containsExactly("a");
    }

    @Test
    void aListedNodesBeatReadLateRenewsItUntilTheTopicIsReadPastItsExpiry() {
        Instant first = clock.instant();
        assertThat(table.apply(Beats.of("a").build(), first)).isEqualTo(NodeTable.Outcome.JOINED);
        clock.advance(Duration.ofSeconds(10)); // discovery 10 s behind the topic, the node beating on
        Instant next = first.plusSeconds(2);

        assertThat(table.apply(Beats.of("a").seq(2L).build(), next)).isNotEqualTo(NodeTable.Outcome.EXPIRED_ON_ARRIVAL);
        assertThat(table.expire(first.plusSeconds(4))).as("read to 4 s: its beat at 2 s holds it").isEmpty();
        assertThat(table.expire(next.plusSeconds(3))).containsExactly("a");
        assertThat(table.apply(Beats.of("a").seq(3L).build(), next.plusSeconds(1)))
                .as("gone: a late beat does not bring it back").isEqualTo(NodeTable.Outcome.EXPIRED_ON_ARRIVAL);
    }

    @Test
    void aReplayedOldRecordDoesNotReviveADeadNode() {
        Instant old = clock.instant().minusSeconds(10);

        assertThat(table.apply(Beats.of("dead").build(), old)).isEqualTo(NodeTable.Outcome.EXPIRED_ON_ARRIVAL);
        table.publishIfDue();
        assertThat(ids()).isEmpty();

        Instant recent = clock.instant().minusMillis(2999);
        assertThat(table.apply(Beats.of("alive").build(), recent)).isEqualTo(NodeTable.Outcome.JOINED);
    }

    @Test
    void aTombstoneRemovesANodeAtOnceAndItsInstanceStaysGone() {
        apply(Beats.of("a").instance("i1").seq(5L).build());

        assertThat(table.remove("a")).isTrue();
        table.publishIfDue();
        assertThat(ids()).isEmpty();
        assertThat(table.remove("a")).isFalse();

        assertThat(apply(Beats.of("a").instance("i1").seq(6L).build())).isEqualTo(NodeTable.Outcome.STALE_INSTANCE);
        assertThat(apply(Beats.of("a").instance("i2").seq(1L).build())).isEqualTo(NodeTable.Outcome.JOINED);
    }

    @Test
    void ignoresSeqNotAboveTheLastOfTheSameInstance() {
        apply(Beats.of("a").seq(5L).weight(1).build());

        assertThat(apply(Beats.of("a").seq(5L).weight(9).build())).isEqualTo(NodeTable.Outcome.OLD_SEQ);
        assertThat(apply(Beats.of("a").seq(4L).weight(9).build())).isEqualTo(NodeTable.Outcome.OLD_SEQ);
        assertThat(table.snapshot().node("a").weight()).isEqualTo(1);
        assertThat(apply(Beats.of("a").seq(6L).weight(9).build())).isEqualTo(NodeTable.Outcome.RENEWED);
        assertThat(table.snapshot().node("a").weight()).isEqualTo(9);
    }

    @Test
    void aNewInstanceReplacesTheOldOneWhichIsThenIgnored() {
        apply(Beats.of("a").instance("old").seq(100L).build());

        assertThat(apply(Beats.of("a").instance("new").seq(1L).build())).isEqualTo(NodeTable.Outcome.RENEWED);
        assertThat(apply(Beats.of("a").instance("old").seq(101L).build())).isEqualTo(NodeTable.Outcome.STALE_INSTANCE);
        assertThat(table.snapshot().node("a").heartbeat().instance()).isEqualTo("new");
    }

    @Test
    void acceptsHeartbeatsWithoutInstanceOrSeqInKafkaOrder() {
        apply(Heartbeat.builder("a", "http://a:1").weight(1).build());
        assertThat(apply(Heartbeat.builder("a", "http://a:1").weight(2).build())).isEqualTo(NodeTable.Outcome.RENEWED);
        assertThat(table.snapshot().node("a").weight()).isEqualTo(2);
    }

    @Test
    void keepsDownAndDrainingNodesListedButNotRoutable() {
        apply(Beats.of("a").build());
        apply(Beats.of("b").state(NodeState.DOWN).build());
        apply(Beats.of("c").state(NodeState.DRAINING).build());

        TableSnapshot s = table.snapshot();
        assertThat(s.nodes()).extracting(Node::id).containsExactly("a", "b", "c");
        assertThat(s.routable()).extracting(Node::id).containsExactly("a");

        apply(Beats.of("b").seq(2L).state(NodeState.UP).build());
        assertThat(table.snapshot().routable()).extracting(Node::id).containsExactly("a", "b");
    }

    @Test
    void freezesExpiryDuringSelfPreservationAndGivesAFullPeriodAfterThawing() {
        apply(Beats.of("a").build());
        table.setFrozen(true);
        clock.advance(Duration.ofMinutes(10));
        assertThat(table.expire()).isEmpty();
        assertThat(table.frozen()).isTrue();

        table.setFrozen(false);
        clock.advance(Duration.ofMillis(2999));
        assertThat(table.expire()).as("a full expiry from the thaw").isEmpty();
        clock.advance(Duration.ofMillis(1));
        assertThat(table.expire()).containsExactly("a");
    }

    @Test
    void indexesCandidatesByNormalisedModel() {
        apply(Beats.serving("a", "llama3"));
        apply(Beats.serving("b", "llama3:latest", "qwen2.5:7b"));
        apply(Beats.of("c").build()); // serves any model
        apply(Beats.of("d").models(List.of("llama3")).state(NodeState.DOWN).build());

        TableSnapshot s = table.snapshot();
        assertThat(s.candidates(ModelNames.normalize("llama3:latest"))).extracting(Node::id).containsExactly("a", "b", "c");
        assertThat(s.candidates(ModelNames.normalize("qwen2.5:7b"))).extracting(Node::id).containsExactly("b", "c");
        assertThat(s.candidates(ModelNames.normalize("mistral"))).extracting(Node::id).containsExactly("c");
        assertThat(s.candidates(null)).extracting(Node::id).containsExactly("a", "b", "c");
    }

    @Test
    void publishesRenewalsAtMostEveryPeriodButMembershipAtOnce() {
        NodeTable lazy = new NodeTable(clock, 3, Duration.ofMillis(50));
        lazy.apply(Beats.of("a").seq(1L).build(), clock.instant());
        assertThat(lazy.publishIfDue()).isTrue();
        long structure = lazy.snapshot().structure();

        lazy.apply(Beats.of("a").seq(2L).load(new Load(3, 0, 0.5)).build(), clock.instant());
        assertThat(lazy.publishIfDue()).isFalse();
        assertThat(lazy.snapshot().node("a").heartbeat().load()).isEqualTo(Load.UNKNOWN);
        clock.advance(Duration.ofMillis(50));
        assertThat(lazy.publishIfDue()).isTrue();
        assertThat(lazy.snapshot().node("a").heartbeat().load()).isEqualTo(new Load(3, 0, 0.5));
        assertThat(lazy.snapshot().structure()).as("a renewal keeps the structure").isEqualTo(structure);

        lazy.apply(Beats.of("b").build(), clock.instant());
        assertThat(lazy.publishIfDue()).isTrue();
        assertThat(lazy.snapshot().structure()).as("a join changes it").isGreaterThan(structure);
        structure = lazy.snapshot().structure();
        lazy.apply(Beats.of("a").seq(3L).state(NodeState.DOWN).build(), clock.instant());
        assertThat(lazy.publishIfDue()).isTrue();
        assertThat(lazy.snapshot().structure()).as("so does a state").isGreaterThan(structure);
    }

    @Test
    void aRenewalSnapshotListsTheRenewedNodesEverywhereAndKnowsWhatIsHeldEverywhere() {
        LoadedModel llama = new LoadedModel("llama3", 1L, 1L, null, 4096);
        apply(Beats.of("a").models(List.of("llama3")).backend("ollama").seq(1L).loaded(List.of(llama)).build());
        apply(Beats.of("b").models(List.of("llama3")).backend("ollama").seq(1L).build()); // nothing in memory
        apply(Beats.of("c").seq(1L).backend("vllm").build()); // any model, always in memory
        TableSnapshot before = table.snapshot();
        String model = ModelNames.normalize("llama3");
        assertThat(before.heldEverywhere(model)).isFalse();

        apply(Beats.of("a").models(List.of("llama3")).backend("ollama").seq(2L).loaded(List.of(llama)).load(new Load(2, 0, 0.5))
                .build());
        TableSnapshot renewed = table.snapshot();
        assertThat(renewed.sameStructure(before)).isTrue();
        Node a = renewed.node("a");
        assertThat(a.heartbeat().load()).isEqualTo(new Load(2, 0, 0.5));
        assertThat(renewed.candidates(model)).extracting(Node::id).containsExactly("a", "b", "c");
        assertThat(renewed.candidates(model).get(0)).isSameAs(a);
        assertThat(renewed.routable().get(0)).isSameAs(a);
        assertThat(renewed.candidates(null).get(0)).isSameAs(a);
        assertThat(before.node("a").heartbeat().load()).as("the snapshot before is untouched").isEqualTo(Load.UNKNOWN);
        assertThat(renewed.heldEverywhere(model)).isFalse();

        apply(Beats.of("b").models(List.of("llama3")).backend("ollama").seq(2L).loaded(List.of(llama)).build());
        assertThat(table.snapshot().sameStructure(before)).isTrue();
        assertThat(table.snapshot().heldEverywhere(model)).as("b loaded it: every node holds it now").isTrue();

        apply(Beats.of("d").build());
        assertThat(table.snapshot().sameStructure(before)).as("a join is a change of structure").isFalse();
        assertThat(new TableSnapshot(before.version(), before.nodes()).sameStructure(before))
                .as("snapshots of different tables never share a structure").isFalse();
    }

    @Test
    void publishesOfATableSlowToPublishWaitTenTimesWhatTheLastTook() {
        // A clock that moves 20 ms at every reading: each publish seems to take 20 ms, so the next
        // waits ten times that, 200 ms: renewals rather than the 50 ms asked for, a join too.
        MutableClock slow = new MutableClock(Instant.parse("2026-12-06T12:00:00Z"));
        slow.advanceOnEveryRead(Duration.ofMillis(20));
        NodeTable lazy = new NodeTable(slow, 3, Duration.ofMillis(50));
        lazy.apply(Beats.of("a").seq(1L).build(), slow.instant());
        assertThat(lazy.publishIfDue()).isTrue();
        long version = lazy.snapshot().version();
        for (long seq = 2; seq < 6; seq++) { // 3 readings each (5 when it publishes): 260 ms or more
            lazy.apply(Beats.of("a").seq(seq).build(), slow.instant());
            lazy.publishIfDue();
        }
        assertThat(lazy.snapshot().version() - version).as("publishes of 4 renewals, the last 200 ms after the join")
                .isEqualTo(1);
        assertThat(lazy.snapshot().node("a").heartbeat().seq()).isEqualTo(5L);

        lazy.apply(Beats.of("b").build(), slow.instant());
        Instant joined = slow.instant();
        int tries = 0;
        while (!lazy.publishIfDue()) {
            tries++;
        }
        assertThat(tries).as("polls before the join is published").isBetween(1, 10);
        assertThat(Duration.between(joined, slow.instant())).isGreaterThanOrEqualTo(Duration.ofMillis(120));
        assertThat(lazy.snapshot().node("b")).isNotNull();
    }

    @Test
    void theFirstExpiryFollowsRenewalsTombstonesAndAThaw() {
        Instant t0 = clock.instant();
        apply(Beats.of("a").seq(1L).build()); // 1 s interval: expires 3 s after it was seen
        clock.advance(Duration.ofMillis(500));
        apply(Beats.of("b").seq(1L).build());
        assertThat(table.firstExpiry()).isEqualTo(t0.plusSeconds(3));

        clock.advance(Duration.ofMillis(500));
        apply(Beats.of("a").seq(2L).build());
        assertThat(table.firstExpiry()).as("a renewed: b is first").isEqualTo(t0.plusMillis(3_500));
        table.remove("b");
        assertThat(table.firstExpiry()).as("b left: a again").isEqualTo(t0.plusSeconds(4));

        table.setFrozen(true);
        clock.advance(Duration.ofSeconds(10));
        assertThat(table.expire()).isEmpty();
        table.setFrozen(false);
        assertThat(table.firstExpiry()).as("a full period from the thaw").isEqualTo(t0.plusSeconds(14));
        clock.advance(Duration.ofSeconds(3));
        assertThat(table.expire()).containsExactly("a");
        assertThat(table.firstExpiry()).isNull();
    }

    @Test
    void aShorterIntervalBringsTheExpiryForwardAndManyRenewalsKeepItRight() {
        Instant t0 = clock.instant();
        apply(Beats.of("a").seq(1L).intervalMs(10_000).build());
        assertThat(table.firstExpiry()).isEqualTo(t0.plusSeconds(30));
        apply(Beats.of("a").seq(2L).intervalMs(1_000).build());
        assertThat(table.firstExpiry()).as("queued earlier than before").isEqualTo(t0.plusSeconds(3));
        for (long seq = 3; seq < 50; seq++) {
            clock.advance(Duration.ofMillis(500));
            apply(Beats.of("a").seq(seq).build());
            assertThat(table.expire()).isEmpty();
        }
        assertThat(table.firstExpiry()).isEqualTo(clock.instant().plusSeconds(3));
        clock.advance(Duration.ofSeconds(3));
        assertThat(table.expire()).containsExactly("a");
    }

    @Test
    void keepsTheInFlightCounterAcrossSnapshots() {
        apply(Beats.of("a").seq(1L).build());
        InFlight counter = table.snapshot().node("a").inFlight();
        counter.increment();

        apply(Beats.of("a").seq(2L).weight(3).build());

        assertThat(table.snapshot().node("a").inFlight()).isSameAs(counter);
        assertThat(table.snapshot().node("a").inFlight().get()).isEqualTo(1);
    }

    @Test
    void reportsTheShortestExpiry() {
        assertThat(table.shortestExpiry(Duration.ofSeconds(9))).isEqualTo(Duration.ofSeconds(9));
        apply(Beats.of("a").intervalMs(500).build());
        apply(Beats.of("b").intervalMs(2000).build());
        assertThat(table.shortestExpiry(Duration.ofSeconds(9))).isEqualTo(Duration.ofMillis(1500));
    }
}
