package io.heartgate.agent.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.NodeState;
import java.net.URI;
import java.time.Instant;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FleetPlanTest {

    @Test
    void everyNodeHasItsOwnLoopbackAddressAndAValidHeartbeat() {
        FleetPlan plan = new FleetPlan(100_000, 1000);
        Set<String> urls = new HashSet<>();
        HeartbeatCodec codec = new HeartbeatCodec();
        Random random = new Random(1);
        for (int i = 0; i < plan.nodes(); i++) {
            String url = FleetPlan.url(i);
            assertThat(urls.add(url)).as(url).isTrue();
            if (i % 997 == 0 || i == plan.nodes() - 1) {
                String host = URI.create(url).getHost();
                assertThat(host).startsWith("127.");
                for (String octet : host.split("\\.")) {
                    assertThat(Integer.parseInt(octet)).isBetween(0, 255);
                }
                Heartbeat hb = plan.heartbeat(i, "i-1", 1, NodeState.UP, random, Instant.EPOCH);
                Decoded decoded = codec.decode(codec.encode(hb)); // what a scheduler reads, rules and all
                assertThat(decoded).as("%s", decoded).isInstanceOf(Decoded.Beat.class);
                Heartbeat back = ((Decoded.Beat) decoded).heartbeat();
                assertThat(back.nodeId()).isEqualTo(FleetPlan.id(i));
                assertThat(back.models()).hasSizeBetween(2, 3);
                assertThat(back.gpus()).isNotEmpty();
                assertThat(back.load().inFlight()).isBetween(0, back.capacity());
            }
        }
    }

    @Test
    void aPerMinuteShareFallsDueEvenlyOverTicks() {
        FleetPlan plan = new FleetPlan(10_000, 1000);
        double[] carry = new double[1];
        int total = 0;
        for (int tick = 0; tick < 6000; tick++) { // a minute of 10 ms ticks
            total += plan.due(0.01, 10, carry);
        }
        assertThat(total).isBetween(99, 100); // 1% of 10,000 a minute
    }
}
