package io.heartgate.scheduler.replicas;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.replicas.EventCodec.Refusal;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The gateway events' records: every kind written and read back, and what is refused and why. */
class EventCodecTest {

    private final EventCodec codec = new EventCodec();

    private EventCodec.Decoded roundTrip(GatewayEvent e) {
        return codec.decode(codec.key(e), codec.encode(e, 42));
    }

    private Refusal refusal(String key, String json) {
        EventCodec.Decoded d = codec.decode(key.getBytes(StandardCharsets.UTF_8), json.getBytes(StandardCharsets.UTF_8));
        assertThat(d).isInstanceOf(EventCodec.Refused.class);
        return ((EventCodec.Refused) d).why();
    }

    @Test
    void everyKindOfEventReadsBackAsWritten() {
        List<GatewayEvent> events = List.of(
                new GatewayEvent.Usage("r1", 1000, Map.of("alice", new GatewayEvent.Debit(3, 1200),
                        "bob", new GatewayEvent.Debit(-1, 0))),
                new GatewayEvent.Ejected("r1", 1001, "gpu-7", 20_000, 3, "connection refused"),
                new GatewayEvent.Held("r1", 1001, "gpu-7", 61_001, "flapping: 4 changes in 60 s; held for 60 s"),
                new GatewayEvent.Readmitted("r2", 1002, "gpu-7"),
                new GatewayEvent.Placed("r2", 1003, GatewayEvent.Placed.Kind.RESPONSE, "resp_abc", "gpu-1", 0),
                new GatewayEvent.Placed("r3", 1004, GatewayEvent.Placed.Kind.SESSION, "9e3779b97f4a7c15", "gpu-2", 4096),
                new GatewayEvent.ReplicaBeat("host-a-1234abcd", 1005, "1.4.0", "10.0.0.2:8080", 7, 1000, 1004, 5000),
                new GatewayEvent.ReplicaBeat("host-a-1234abcd", 1006, "1.4.0", "10.0.0.2:8080", 7, 1000, -1, -1),
                new GatewayEvent.ReplicaLeft("host-a-1234abcd", 1006));
        for (GatewayEvent e : events) {
            assertThat(roundTrip(e)).isEqualTo(new EventCodec.Event(e, 42));
        }
        assertThat(new String(codec.key(events.get(1)), StandardCharsets.UTF_8)).isEqualTo("node/gpu-7");
        assertThat(new String(codec.key(events.get(3)), StandardCharsets.UTF_8)).as("the same key: compaction keeps the last")
                .isEqualTo("node/gpu-7");
        assertThat(new String(codec.key(events.get(2)), StandardCharsets.UTF_8))
                .as("a hold of its own key: an ejection's readmission does not end it").isEqualTo("held/gpu-7");
    }

    @Test
    void whatIsNotAWellFormedRecordOfThisVersionIsRefusedWithItsReason() {
        assertThat(refusal("usage/r1", "not json")).isEqualTo(Refusal.MALFORMED);
        assertThat(refusal("usage/r1", "[1,2]")).isEqualTo(Refusal.MALFORMED);
        assertThat(refusal("usage/r1", "{\"v\":2,\"type\":\"usage\",\"replica\":\"r1\",\"sentAt\":1,\"keys\":{}}"))
                .isEqualTo(Refusal.VERSION);
        assertThat(refusal("usage/r1", "{\"type\":\"usage\",\"replica\":\"r1\",\"sentAt\":1,\"keys\":{}}"))
                .isEqualTo(Refusal.VERSION);
        assertThat(refusal("x/r1", "{\"v\":1,\"type\":\"gossip\",\"replica\":\"r1\",\"sentAt\":1}")).isEqualTo(Refusal.TYPE);
        assertThat(refusal("usage/r2", "{\"v\":1,\"type\":\"usage\",\"replica\":\"r1\",\"sentAt\":1,\"keys\":{}}"))
                .as("kept under another replica's key").isEqualTo(Refusal.FIELD);
        assertThat(refusal("usage/r1", "{\"v\":1,\"type\":\"usage\",\"replica\":\"r1\",\"sentAt\":1,"
                + "\"keys\":{\"a\":[1,-5]}}")).as("negative tokens").isEqualTo(Refusal.FIELD);
        assertThat(refusal("replica/r1", "{\"v\":1,\"type\":\"replica\",\"replica\":\"r1\",\"sentAt\":1,\"seq\":1,"
                + "\"version\":\"dev\",\"address\":\"h:1\",\"queue\":0,\"interval\":1000,\"tableReadTo\":1,\"longestNodeInterval\":-5}"))
                .as("a negative longest node interval").isEqualTo(Refusal.FIELD);
        assertThat(refusal("usage/r1", "{\"v\":1,\"type\":\"usage\",\"replica\":\"r1\",\"sentAt\":1,"
                + "\"keys\":{\"a\":[1.5,0]}}")).isEqualTo(Refusal.FIELD);
        assertThat(refusal("usage/r 1", "{\"v\":1,\"type\":\"usage\",\"replica\":\"r 1\",\"sentAt\":1,\"keys\":{}}"))
                .isEqualTo(Refusal.FIELD);
        assertThat(refusal("session/zz", "{\"v\":1,\"type\":\"placed\",\"replica\":\"r1\",\"sentAt\":1,\"kind\":\"session\","
                + "\"id\":\"zz\",\"node\":\"n\",\"bytes\":0}")).isEqualTo(Refusal.FIELD);
        assertThat(refusal("node/a b", "{\"v\":1,\"type\":\"readmitted\",\"replica\":\"r1\",\"sentAt\":1,\"seq\":1,"
                + "\"node\":\"a b\"}")).as("not a node id").isEqualTo(Refusal.FIELD);
        assertThat(refusal("usage/r1", "{\"v\":1,\"type\":\"usage\",\"replica\":\"r1\",\"sentAt\":1,\"seq\":1,"
                + "\"keys\":{\"a\":[-9223372036854775808,0]}}")).as("a give-back no replica makes").isEqualTo(Refusal.FIELD);
        assertThat(refusal("usage/r1", "{\"v\":1,\"type\":\"usage\",\"replica\":\"r1\",\"sentAt\":1,\"keys\":{}}"))
                .as("no seq").isEqualTo(Refusal.FIELD);
        assertThat(refusal("node/" + "n".repeat(300), "{\"v\":1,\"type\":\"readmitted\",\"replica\":\"r1\",\"sentAt\":1,"
                + "\"node\":\"" + "n".repeat(300) + "\"}")).isEqualTo(Refusal.FIELD);
        assertThat(codec.decode(null, new byte[1])).isInstanceOf(EventCodec.Refused.class);
        assertThat(codec.decode("usage/r1".getBytes(StandardCharsets.UTF_8), new byte[EventCodec.MAX_RECORD_BYTES + 1]))
                .extracting(d -> ((EventCodec.Refused) d).why()).isEqualTo(Refusal.MALFORMED);
    }

    @Test
    void textThatIsLoggedAndShownLosesItsControlCharacters() {
        GatewayEvent.Ejected e = new GatewayEvent.Ejected("r1", 1, "gpu-7", 2, 3, "refused\nNode gpu-8 ejected\u2028");
        assertThat(((EventCodec.Event) roundTrip(e)).event()).extracting(x -> ((GatewayEvent.Ejected) x).reason())
                .isEqualTo("refused?Node gpu-8 ejected?");
    }

    @Test
    void aUsageReportNamesAtMostTheBoundOfKeys() {
        Map<String, GatewayEvent.Debit> many = new HashMap<>();
        for (int i = 0; i <= EventCodec.MAX_KEYS; i++) {
            many.put("k" + i, new GatewayEvent.Debit(1, 0));
        }
        GatewayEvent.Usage u = new GatewayEvent.Usage("r1", 1, many);
        assertThat(roundTrip(u)).extracting(d -> ((EventCodec.Refused) d).why()).isEqualTo(Refusal.FIELD);
        Outbox outbox = new Outbox("r1", Clock.systemUTC());
        many.keySet().forEach(k -> outbox.used(k, 1, 0));
        GatewayEvent.Usage first = outbox.takeUsage();
        assertThat(first.byKey()).hasSize(EventCodec.MAX_KEYS);
        assertThat(roundTrip(first)).isInstanceOf(EventCodec.Event.class);
        assertThat(outbox.takeUsage().byKey()).as("the rest in the next report").hasSize(1);
        assertThat(outbox.takeUsage()).isNull();
    }
}
