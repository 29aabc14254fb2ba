package io.heartgate.scheduler.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.scheduler.balancer.Balancer;
import io.heartgate.scheduler.balancer.Picker;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.table.TableSnapshot;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What routing keeps of a snapshot, and what a renewal of the same structure takes over. */
class SnapshotPickersTest {

    private final Clock clock = Clock.fixed(Instant.parse("2026-12-06T12:00:00Z"), ZoneOffset.UTC);
    private final NodeTable table = new NodeTable(clock, 3, Duration.ZERO);

    /** A strategy's balancer that counts the pickers it builds. */
    private static final class Counting implements Balancer {
        final Balancer inner = Strategy.LEAST_CONNECTIONS.create(new Random(1), 0);
        final AtomicInteger built = new AtomicInteger();

        @Override
        public Optional<Node> pick(List<Node> candidates) {
            return inner.pick(candidates);
        }

        @Override
        public Picker over(List<Node> candidates) {
            built.incrementAndGet();
            return inner.over(candidates);
        }
    }

    private void beat(String id, long seq, int inFlight) {
        table.apply(Heartbeat.builder(id, "http://" + id + ":8000").instance("i1").seq(seq).intervalMs(1000)
                .load(new Load(inFlight, 0, null)).build(), clock.instant());
        table.publishIfDue();
    }

    @Test
    void aRenewalOfTheSameStructureKeepsThePickerAndPicksItsOwnNodes() {
        Counting balancer = new Counting();
        SnapshotPickers pickers = new SnapshotPickers(balancer);
        beat("a", 1, 0);
        beat("b", 1, 0);
        TableSnapshot first = table.snapshot();
        pickers.pickWhole(first, null, first.candidates(null));
        assertThat(balancer.built).hasValue(1);

        beat("a", 2, 3); // figures only
        TableSnapshot renewed = table.snapshot();
        assertThat(renewed).isNotSameAs(first);
        for (int i = 0; i < 4; i++) {
            Node picked = pickers.pickWhole(renewed, null, renewed.candidates(null));
            assertThat(picked).as("a node of the snapshot picked from, never one of the snapshot before")
                    .isSameAs(renewed.node(picked.id()));
        }
        assertThat(balancer.built).as("no new picker for a renewal").hasValue(1);

        beat("c", 1, 0); // a join: new positions, a new picker
        TableSnapshot joined = table.snapshot();
        assertThat(pickers.pickWhole(joined, null, joined.candidates(null))).isIn(joined.candidates(null));
        assertThat(balancer.built).hasValue(2);
    }
}
