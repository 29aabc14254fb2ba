package io.heartgate.scheduler.replicas;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.testkit.MutableClock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Which replicas are alive, and when a replica stops sharing its limits and holds its share instead. */
class ReplicaViewTest {

    private final MutableClock clock = new MutableClock();
    private final ReplicaView view = new ReplicaView("me", clock, 3_000);

    private void beat(String id) {
        view.heard(new GatewayEvent.ReplicaBeat(id, clock.millis(), "dev", id + ":8080", 0, 1_000, -1, -1));
    }

    @Test
    void replicasSilentForThreeIntervalsLeaveTheListAndTheOneLeavingGoesAtOnce() {
        view.contact();
        beat("me");
        beat("b");
        beat("c");
        view.refresh();
        assertThat(view.replicas()).extracting(ReplicaView.Replica::id).containsExactly("me", "b", "c");
        clock.advance(Duration.ofMillis(2_000));
        view.contact();
        beat("b");
        view.left("c");
        view.refresh();
        assertThat(view.replicas()).extracting(ReplicaView.Replica::id).containsExactly("me", "b");
        clock.advance(Duration.ofMillis(3_001));
        view.contact();
        view.refresh();
        assertThat(view.replicas()).extracting(ReplicaView.Replica::id).as("itself stays").containsExactly("me");
    }

    @Test
    void withoutTheTopicForThreeSecondsEachKeyIsHeldToItsShareOfTheReplicasLastSeen() {
        view.contact();
        beat("me");
        beat("b");
        beat("c");
        view.refresh();
        assertThat(view.degraded()).isFalse();
        assertThat(view.shares()).isEqualTo(1);
        clock.advance(Duration.ofMillis(2_999));
        view.refresh();
        assertThat(view.degraded()).isFalse();
        clock.advance(Duration.ofMillis(2));
        view.refresh();
        assertThat(view.degraded()).isTrue();
        assertThat(view.shares()).isEqualTo(3);
        clock.advance(Duration.ofSeconds(30)); // no heartbeats read meanwhile: the list is kept as last seen
        view.refresh();
        assertThat(view.shares()).isEqualTo(3);
        view.contact(); // back
        beat("me");
        beat("b");
        beat("c");
        view.refresh();
        assertThat(view.degraded()).isFalse();
        assertThat(view.shares()).isEqualTo(1);
        view.published(false); // reads work, but its own reports are not stored: the others cannot debit them
        view.refresh();
        assertThat(view.degraded()).as("one failed report is no outage").isFalse();
        clock.advance(Duration.ofMillis(3_001));
        view.contact();
        view.refresh();
        assertThat(view.degraded()).isTrue();
        view.published(true);
        view.refresh();
        assertThat(view.degraded()).isFalse();
    }

    @Test
    void anOutageBeginningBetweenHeartbeatsIsNoReplicasDeath() {
        view.contact();
        beat("me");
        beat("b");
        beat("c");
        clock.advance(Duration.ofMillis(900));
        view.contact(); // a usage report read; the replicas' next heartbeats never come: Kafka stops here
        clock.advance(Duration.ofMillis(2_500)); // their last heartbeats are 3.4 s old, the topic's silence 2.5 s
        view.refresh();
        assertThat(view.replicas()).hasSize(3);
        clock.advance(Duration.ofMillis(600));
        view.refresh();
        assertThat(view.degraded()).isTrue();
        assertThat(view.shares()).as("the three last seen, not the one left").isEqualTo(3);
    }
}
