package io.heartgate.scheduler.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** A lease is the one owner of a request's in-flight count on its node: taken once, given back once. */
class LeaseTest {

    private static Node node(Integer capacity) {
        return Node.of(Heartbeat.builder("n1", "http://127.0.0.1:1").capacity(capacity).build(), Instant.EPOCH,
                new InFlight());
    }

    @Test
    void aNodeOfKnownCapacityLeasesNoMoreThanItsSlots() {
        Node n = node(2);
        Lease a = Lease.take(n);
        Lease b = Lease.take(n);
        assertThat(a).isNotNull();
        assertThat(b).isNotNull();
        assertThat(Lease.take(n)).as("full").isNull();
        assertThat(n.inFlight().get()).isEqualTo(2);
        assertThat(a.bounded()).isTrue();
    }

    @Test
    void releasingTwiceGivesBackOnce() {
        Node n = node(2);
        Lease a = Lease.take(n);
        Lease b = Lease.take(n);
        assertThat(a.release()).as("a slot the queue can use").isTrue();
        assertThat(a.release()).as("the second call does nothing").isFalse();
        assertThat(n.inFlight().get()).isEqualTo(1);
        assertThat(a.released()).isTrue();
        assertThat(b.released()).isFalse();
    }

    @Test
    void aLeaseCountsItsModelLoadUntilReleased() {
        Node n = node(null);
        Lease a = Lease.take(n);
        a.loading("llama3:8b");
        a.loading("llama3:8b"); // counted once
        assertThat(n.inFlight().loading("llama3:8b")).isEqualTo(1);
        assertThat(a.bounded()).as("unknown capacity: not a slot the queue waits for").isFalse();
        assertThat(a.release()).isFalse();
        assertThat(n.inFlight().loading("llama3:8b")).isZero();
        assertThat(n.inFlight().get()).isZero();
        a.loading("llama3:8b");
        assertThat(n.inFlight().loading("llama3:8b")).as("nothing after release").isZero();
    }

    @Test
    void aManagementCallHoldsItsNodeWithoutASlot() {
        Node n = node(1);
        Lease pinned = Lease.uncounted(n);
        pinned.loading("llama3:8b");
        assertThat(n.inFlight().get()).isZero();
        assertThat(n.inFlight().loading("llama3:8b")).isZero();
        assertThat(Lease.take(n)).as("its one slot is still free").isNotNull();
        assertThat(pinned.release()).isFalse();
        assertThat(n.inFlight().get()).isEqualTo(1);
    }
}
