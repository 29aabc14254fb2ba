package io.heartgate.scheduler.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.trust.ApiKeys;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TokenBucketTest {

    private static final long SECOND = 1_000_000_000L;

    @Test
    void aFullBucketBurstsOneMinutesAllowanceThenRefillsAtTheSteadyRate() {
        TokenBucket b = new TokenBucket(60, 0);
        for (int i = 0; i < 60; i++) {
            assertThat(b.tryTake(1, 0)).isTrue();
        }
        assertThat(b.tryTake(1, 0)).isFalse();
        assertThat(b.remaining(0)).isZero();
        assertThat(b.nanosUntil(1, 0)).isEqualTo(SECOND); // 60 a minute: one a second
        assertThat(b.tryTake(1, SECOND - 1)).isFalse();
        assertThat(b.tryTake(1, SECOND)).isTrue();
        assertThat(b.nanosUntilFull(SECOND)).isEqualTo(60 * SECOND);
        assertThat(b.remaining(SECOND + 30 * SECOND)).isEqualTo(30);
        assertThat(b.remaining(Long.MAX_VALUE / 2)).as("never above its size").isEqualTo(60);
    }

    @Test
    void aTokenGivenBackIsTakenAgainButNeverFillsPastTheLimit() {
        TokenBucket b = new TokenBucket(2, 0);
        assertThat(b.tryTake(1, 0)).isTrue();
        assertThat(b.tryTake(1, 0)).isTrue();
        b.giveBack(1, 0);
        assertThat(b.remaining(0)).isEqualTo(1);
        assertThat(b.tryTake(1, 0)).isTrue();
        assertThat(b.tryTake(1, 0)).isFalse();
        b.giveBack(5, 0);
        assertThat(b.remaining(0)).isEqualTo(2);
    }

    @Test
    void tokensUsedAfterTheFactMayPutItInDebtUntilTheRefillPaysItOff() {
        TokenBucket b = new TokenBucket(600, 0); // 10 a second
        b.charge(700, 0);
        assertThat(b.hasAny(0)).isFalse();
        assertThat(b.remaining(0)).isZero();
        assertThat(b.nanosUntil(1, 0)).isEqualTo(10_100_000_000L); // 101 tokens to go at 10 a second: 10.1 s
        assertThat(b.hasAny(10 * SECOND)).isFalse();
        assertThat(b.hasAny(10 * SECOND + SECOND / 10)).isTrue();
    }

    @Test
    void overTheRequestLimitIs429WithRetryAfterAndTheOpenAiHeaders() {
        long[] now = {0};
        RateLimits limits = new RateLimits(Ticker.ofNanos(() -> now[0]));
        ApiKeys.Key key = new ApiKeys.Key("team", Set.of(), 0, 2, 0);
        RateLimits.Verdict first = limits.admit(key);
        assertThat(first.allowed()).isTrue();
        assertThat(first.headers()).containsEntry("x-ratelimit-limit-requests", "2")
                .containsEntry("x-ratelimit-remaining-requests", "1")
                .containsEntry("x-ratelimit-reset-requests", "30s")
                .doesNotContainKey("x-ratelimit-limit-tokens");
        assertThat(limits.admit(key).allowed()).isTrue();
        RateLimits.Verdict refused = limits.admit(key);
        assertThat(refused.allowed()).isFalse();
        assertThat(refused.limit()).isEqualTo("requests");
        assertThat(refused.retryAfterSeconds()).isEqualTo(30); // 2 a minute: one every 30 s
        assertThat(refused.headers()).containsEntry("x-ratelimit-remaining-requests", "0")
                .containsEntry("x-ratelimit-reset-requests", "1m0s");
        now[0] = 30 * SECOND;
        assertThat(limits.admit(key).allowed()).isTrue();
    }

    @Test
    void overTheTokenLimitRefusesUntilTheDebtIsPaid() {
        long[] now = {0};
        RateLimits limits = new RateLimits(Ticker.ofNanos(() -> now[0]));
        ApiKeys.Key key = new ApiKeys.Key("team", Set.of(), 0, 0, 120);
        assertThat(limits.admit(key).allowed()).isTrue();
        limits.charge(key, 150);
        RateLimits.Verdict refused = limits.admit(key);
        assertThat(refused.allowed()).isFalse();
        assertThat(refused.limit()).isEqualTo("tokens");
        assertThat(refused.retryAfterSeconds()).isEqualTo(16); // 31 tokens at 2 a second: 15.5 s, rounded up
        assertThat(refused.headers()).containsEntry("x-ratelimit-limit-tokens", "120")
                .containsEntry("x-ratelimit-remaining-tokens", "0");
        now[0] = 16 * SECOND;
        assertThat(limits.admit(key).allowed()).isTrue();
    }

    @Test
    void anAbsurdCountLocksTheKeyOutForADayAtMostWithWaitsThatStillMakeSense() {
        long[] now = {0};
        RateLimits limits = new RateLimits(Ticker.ofNanos(() -> now[0]));
        ApiKeys.Key key = new ApiKeys.Key("team", Set.of(), 0, 0, 120);
        limits.charge(key, 999_999_999_999_999_999L); // the most digits a usage figure is read with
        limits.charge(key, 999_999_999_999_999_999L);
        RateLimits.Verdict refused = limits.admit(key);
        assertThat(refused.allowed()).isFalse();
        assertThat(refused.retryAfterSeconds()).isEqualTo(24 * 60 * 60 + 1); // a day's 172,800 tokens and one, at 2 a second
        assertThat(refused.headers()).containsEntry("x-ratelimit-reset-tokens", "1441m0s");
        now[0] = (24 * 60 * 60 + 1) * SECOND;
        assertThat(limits.admit(key).allowed()).isTrue();
    }

    @Test
    void aKeyWithoutLimitsCostsNothingAndARaisedLimitRefillsAtItsRate() {
        long[] now = {0};
        RateLimits limits = new RateLimits(Ticker.ofNanos(() -> now[0]));
        assertThat(limits.admit(new ApiKeys.Key("free", Set.of()))).isSameAs(RateLimits.Verdict.UNLIMITED);
        ApiKeys.Key one = new ApiKeys.Key("team", Set.of(), 0, 1, 0);
        assertThat(limits.admit(one).allowed()).isTrue();
        assertThat(limits.admit(one).allowed()).isFalse();
        ApiKeys.Key raised = new ApiKeys.Key("team", Set.of(), 0, 120, 0); // the keys file was edited
        assertThat(limits.admit(raised).allowed()).as("no fresh minute").isFalse();
        now[0] = SECOND / 2; // 120 a minute: one token every half second
        RateLimits.Verdict v = limits.admit(raised);
        assertThat(v.allowed()).isTrue();
        assertThat(v.headers()).containsEntry("x-ratelimit-limit-requests", "120");
    }

    @Test
    void aLimitSetByAReloadIsNotStartedFullAgainByARequestHoldingTheLineWithoutIt() {
        RateLimits limits = new RateLimits(Ticker.ofNanos(() -> 0));
        ApiKeys.Key without = new ApiKeys.Key("team", Set.of(), 0, 0, 100);
        ApiKeys.Key with = new ApiKeys.Key("team", Set.of(), 0, 5, 100);
        limits.admit(without);
        for (int i = 0; i < 5; i++) {
            assertThat(limits.admit(with).allowed()).isTrue();
        }
        assertThat(limits.admit(with).allowed()).isFalse();
        assertThat(limits.admit(without).allowed()).as("no rpm= on that line").isTrue();
        assertThat(limits.admit(with).allowed()).as("its bucket was kept, dormant, not made anew").isFalse();
    }

    @Test
    void aRequestThatLookedUpTheOldLineJustBeforeAReloadForgivesNothing() {
        RateLimits limits = new RateLimits(Ticker.ofNanos(() -> 0));
        ApiKeys.Key before = new ApiKeys.Key("team", Set.of(), 0, 0, 100_000);
        ApiKeys.Key after = new ApiKeys.Key("team", Set.of(), 0, 0, 1000);
        limits.admit(before);
        limits.charge(before, 150_000); // 50,000 tokens of debt
        for (int i = 0; i < 3; i++) { // event loops holding the old line and the new one, interleaved
            assertThat(limits.admit(after).allowed()).isFalse();
            assertThat(limits.admit(before).allowed()).isFalse();
        }
        assertThat(limits.peek(after)).containsEntry("x-ratelimit-remaining-tokens", "0");
    }

    @Test
    void aLoweredLimitNeitherRefillsTheKeyNorForgivesItsDebt() {
        long[] now = {0};
        RateLimits limits = new RateLimits(Ticker.ofNanos(() -> now[0]));
        ApiKeys.Key key = new ApiKeys.Key("team", Set.of(), 0, 10, 120);
        for (int i = 0; i < 5; i++) {
            assertThat(limits.admit(key).allowed()).isTrue();
        }
        limits.charge(key, 1000); // 880 tokens of debt
        ApiKeys.Key lowered = new ApiKeys.Key("team", Set.of(), 0, 3, 60); // the operator reins it in
        RateLimits.Verdict v = limits.admit(lowered);
        assertThat(v.allowed()).as("still in debt").isFalse();
        assertThat(v.limit()).isEqualTo("tokens");
        assertThat(v.headers()).containsEntry("x-ratelimit-limit-requests", "3")
                .containsEntry("x-ratelimit-remaining-requests", "3") // 5 left of 10: at most the new 3
                .containsEntry("x-ratelimit-remaining-tokens", "0");
        // The debt, 880 tokens at the new 60 a minute: paid off after 14 min 40 s, not before.
        now[0] = (14 * 60 + 39) * SECOND;
        assertThat(limits.admit(lowered).allowed()).isFalse();
        now[0] = (14 * 60 + 41) * SECOND;
        assertThat(limits.admit(lowered).allowed()).isTrue();
    }

    @Test
    void resetTimesAreWrittenAsOpenAiDoes() {
        assertThat(RateLimits.reset(0)).isEqualTo("0ms");
        assertThat(RateLimits.reset(250_000_000L)).isEqualTo("250ms");
        assertThat(RateLimits.reset(SECOND)).isEqualTo("1s");
        assertThat(RateLimits.reset(1_500_000_000L)).isEqualTo("2s");
        assertThat(RateLimits.reset(360 * SECOND)).isEqualTo("6m0s");
        assertThat(RateLimits.reset(61 * SECOND)).isEqualTo("1m1s");
    }
}
