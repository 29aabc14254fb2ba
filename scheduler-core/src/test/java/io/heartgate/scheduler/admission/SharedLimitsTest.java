package io.heartgate.scheduler.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.time.Ticker;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A key's limits held by several replicas: what one grants is debited from the others' buckets,
 * a replica started later rebuilds its bucket from the reports of the last minute, and while the
 * reports cannot travel each replica holds its share.
 */
class SharedLimitsTest {

    private static final long SECOND = 1_000_000_000L;

    private record Key(String name, long rpm, long tpm) implements Quota {
    }

    private final long[] now = {100 * SECOND};
    private final Ticker ticker = Ticker.ofNanos(() -> now[0]);

    @Test
    void whatOneReplicaGrantsTheOthersDebit() {
        Key key = new Key("team", 6, 0);
        List<RateLimits> replicas = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int self = i;
            replicas.add(new RateLimits(ticker, (name, requests, tokens) -> {
                for (int j = 0; j < replicas.size(); j++) {
                    if (j != self) { // the topic, with no delay: every report reaches the others at once
                        replicas.get(j).debit(key, requests, tokens, now[0]);
                    }
                }
            }, () -> 1));
        }
        int granted = 0;
        for (int i = 0; i < 30; i++) {
            granted += replicas.get(i % 3).admit(key).allowed() ? 1 : 0;
        }
        assertThat(granted).as("one limit for the three").isEqualTo(6);
        now[0] += 10 * SECOND; // a minute's 6 refill one every 10 s, on every replica alike
        assertThat(replicas.get(1).admit(key).allowed()).isTrue();
        assertThat(replicas.get(2).admit(key).allowed()).isFalse();
        assertThat(replicas.get(0).admit(key).allowed()).isFalse();
    }

    @Test
    void aRequestGivenBackAndTokensChargedTravelToo() {
        Key key = new Key("team", 2, 100);
        List<long[]> reports = new ArrayList<>();
        RateLimits one = new RateLimits(ticker, (name, requests, tokens) -> reports.add(new long[] {requests, tokens}),
                () -> 1);
        one.admit(key);
        one.giveBack("team");
        one.charge(key, 40);
        assertThat(reports).containsExactly(new long[] {1, 0}, new long[] {-1, 0}, new long[] {0, 40});
        RateLimits other = new RateLimits(ticker);
        reports.forEach(r -> other.debit(key, r[0], r[1], now[0]));
        assertThat(other.peek(key)).containsEntry("x-ratelimit-remaining-requests", "2")
                .containsEntry("x-ratelimit-remaining-tokens", "60");
    }

    @Test
    void aReplicaStartedLaterRebuildsItsBucketFromTheLastMinutesReports() {
        Key key = new Key("team", 60, 0);
        RateLimits restarted = new RateLimits(ticker);
        // Read from the topic in order: 60 requests granted elsewhere 30 s ago, 10 more 10 s ago.
        restarted.debit(key, 60, 0, now[0] - 30 * SECOND);
        restarted.debit(key, 10, 0, now[0] - 10 * SECOND);
        // Full at the first report, emptied, 20 refilled by the second, 10 taken, 10 refilled since.
        assertThat(restarted.peek(key)).containsEntry("x-ratelimit-remaining-requests", "20");
    }

    @Test
    void whileTheReportsCannotTravelEachReplicaHoldsItsShare() {
        Key key = new Key("team", 60, 0);
        int[] shares = {1};
        RateLimits limits = new RateLimits(ticker, SharedUsage.NONE, () -> shares[0]);
        assertThat(limits.admit(key).headers()).containsEntry("x-ratelimit-limit-requests", "60");
        shares[0] = 3; // Kafka away, three replicas last seen
        RateLimits.Verdict v = limits.admit(key);
        assertThat(v.headers()).containsEntry("x-ratelimit-limit-requests", "20")
                .containsEntry("x-ratelimit-remaining-requests", "19");
        int granted = 1;
        while (limits.admit(key).allowed()) {
            granted++;
        }
        assertThat(granted).isEqualTo(20);
        assertThat(RateLimits.share(7, 3)).isEqualTo(2);
        assertThat(RateLimits.share(2, 3)).as("never none").isEqualTo(1);
        assertThat(RateLimits.share(0, 3)).as("no limit stays none").isZero();
        shares[0] = 1; // back: the whole limit, the bucket as it stands
        assertThat(limits.admit(key).headers()).containsEntry("x-ratelimit-limit-requests", "60");
    }
}
