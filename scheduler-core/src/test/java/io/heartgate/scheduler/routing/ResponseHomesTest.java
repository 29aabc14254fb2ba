package io.heartgate.scheduler.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.scheduler.time.Ticker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The memory of which node made each response: its bounds in size and time, and the reading of ids. */
class ResponseHomesTest {

    private final AtomicLong nanos = new AtomicLong();
    private final ResponseHomes homes = new ResponseHomes(3, Duration.ofMinutes(10), Ticker.ofNanos(nanos::get));

    @Test
    void theOldestIdGoesFirstWhenTheMemoryIsFull() {
        homes.put("resp_1", "a");
        homes.put("resp_2", "b");
        homes.put("resp_3", "c");
        homes.put("resp_1", "a"); // seen again: the newest now
        homes.put("resp_4", "d");
        assertThat(homes.size()).isEqualTo(3);
        assertThat(homes.node("resp_2")).isNull();
        assertThat(homes.node("resp_1")).isEqualTo("a");
        assertThat(homes.node("resp_4")).isEqualTo("d");
    }

    @Test
    void anIdIsForgottenAfterItsTimeToLive() {
        homes.put("resp_1", "a");
        nanos.addAndGet(Duration.ofMinutes(9).toNanos());
        assertThat(homes.node("resp_1")).isEqualTo("a");
        nanos.addAndGet(Duration.ofMinutes(1).toNanos());
        assertThat(homes.node("resp_1")).isNull();
        assertThat(homes.size()).isZero();
    }

    @Test
    void idsNotedHereAreToldAndIdsFromOtherReplicasLiveOutTheirTime() {
        List<String> told = new ArrayList<>();
        homes.share((id, node) -> told.add(id + "@" + node));
        homes.put("resp_1", "a");
        homes.adopt("resp_2", "b", Duration.ofMinutes(6).toNanos()); // placed elsewhere six minutes ago
        assertThat(told).containsExactly("resp_1@a");
        assertThat(homes.node("resp_2")).isEqualTo("b");
        nanos.addAndGet(Duration.ofMinutes(5).toNanos() + 1);
        assertThat(homes.node("resp_1")).isEqualTo("a");
        assertThat(homes.node("resp_2")).as("its time to live counts from when it was placed").isNull();
        homes.adopt("resp_3", "c", Duration.ofHours(1).toNanos());
        assertThat(homes.node("resp_3")).as("too old to keep").isNull();
    }

    @Test
    void overlongIdsAreNotKept() {
        homes.put("resp_" + "x".repeat(300), "a");
        assertThat(homes.size()).isZero();
        assertThatThrownBy(() -> new ResponseHomes(0, Duration.ofMinutes(1), Ticker.SYSTEM))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theIdIsReadFromAWholeAnswerAndFromAStreamsFirstEvent() {
        assertThat(id("{\"id\":\"resp_abc123\",\"object\":\"response\",\"output\":[{\"id\":\"msg_1\"}]}"))
                .isEqualTo("resp_abc123");
        assertThat(id("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
                + "\"response\":{\"id\": \"resp_9f\",\"object\":\"response\"}}\n\n")).isEqualTo("resp_9f");
        assertThat(id("{\"output\":[{\"id\":\"msg_1\"}],\"id\":\"resp_late\"}")).as("the first resp_ id").isEqualTo("resp_late");
        assertThat(id("{\"id\":\"chatcmpl-1\"}")).isNull();
        assertThat(id("{\"id\":\"resp_cut")).as("cut off").isNull();
        assertThat(id("{\"id\":\"resp_a\\\"b\"}")).as("escaped: no id a server makes").isNull();
    }

    private static String id(String body) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        return ResponseHomes.idIn(b, b.length);
    }
}
