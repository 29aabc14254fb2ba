package io.heartgate.scheduler.proxy.policy;

import io.heartgate.scheduler.proxy.policy.RetryPolicy.Action;
import io.heartgate.scheduler.proxy.policy.RetryPolicy.Failure;
import io.heartgate.scheduler.request.ErrorType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import static org.assertj.core.api.Assertions.assertThat;

/** Every failure rule of the relay, as rows: with 2 retries, attempts 1 and 2 may retry, attempt 3 may not. */
class RetryPolicyTest {

    private final RetryPolicy policy = new RetryPolicy(2);

    @ParameterizedTest(name = "{0} after {1} attempts, bytes to client {2}, resent {3}: {4} {5}")
    @CsvSource(nullValues = "-", value = {
        // failure,          attempts, bytes, resent, action,          error
        "CONNECT_FAILED,     1, false, false, RETRY_ELSEWHERE,  -",
        "CONNECT_FAILED,     2, false, false, RETRY_ELSEWHERE,  -",
        "CONNECT_FAILED,     3, false, false, ANSWER,           UPSTREAM_UNREACHABLE",
        "NODE_LOST,          1, false, false, RETRY_ELSEWHERE,  -",
        "NODE_LOST,          3, false, false, ANSWER,           UPSTREAM_UNREACHABLE",
        "NODE_LOST,          1, true,  false, CUT,              -",
        "RESET_BEFORE_HEAD,  1, false, false, RETRY_ELSEWHERE,  -",
        "RESET_BEFORE_HEAD,  3, false, false, ANSWER,           UPSTREAM_UNREACHABLE",
        "RESET_BEFORE_HEAD,  1, false, true,  RETRY_ELSEWHERE,  -",
        "STALE_CONNECTION,   1, false, false, RESEND_SAME_NODE, -",
        "STALE_CONNECTION,   3, false, false, RESEND_SAME_NODE, -",
        "STALE_CONNECTION,   1, false, true,  RETRY_ELSEWHERE,  -",
        "STALE_CONNECTION,   3, false, true,  ANSWER,           UPSTREAM_UNREACHABLE",
        "OVERLOAD_ANSWER,    1, false, false, RETRY_ELSEWHERE,  -",
        "OVERLOAD_ANSWER,    2, false, false, RETRY_ELSEWHERE,  -",
        "OVERLOAD_ANSWER,    3, false, false, PASS_THROUGH,     -",
        "FIRST_BYTE_TIMEOUT, 1, false, false, ANSWER,           UPSTREAM_TIMEOUT",
        "FIRST_BYTE_TIMEOUT, 3, false, false, ANSWER,           UPSTREAM_TIMEOUT",
        "IDLE_TIMEOUT,       1, true,  false, CUT,              -",
        "BROKE_OFF,          1, true,  false, CUT,              -",
        "RESET_BEFORE_HEAD,  1, true,  false, CUT,              -",
        "CLIENT_GONE,        1, false, false, ABANDON,          -",
        "CLIENT_GONE,        1, true,  false, ABANDON,          -",
        "CLIENT_GONE,        3, false, true,  ABANDON,          -",
    })
    void decides(Failure failure, int attempts, boolean bytesToClient, boolean resent, Action action, ErrorType error) {
        RetryPolicy.Decision d = policy.decide(failure, attempts, bytesToClient, resent);

        assertThat(d.action()).isEqualTo(action);
        assertThat(d.error()).isEqualTo(error);
    }

    @ParameterizedTest
    @EnumSource(Failure.class)
    void nothingIsRetriedOnceAByteReachedTheClient(Failure failure) {
        for (int attempts = 1; attempts <= 3; attempts++) {
            assertThat(policy.decide(failure, attempts, true, false).action())
                    .isIn(Action.CUT, Action.ABANDON);
        }
    }

    @Test
    void withoutRetriesTheFirstFailureIsAnswered() {
        RetryPolicy none = new RetryPolicy(0);

        assertThat(none.decide(Failure.CONNECT_FAILED, 1, false, false).error()).isEqualTo(ErrorType.UPSTREAM_UNREACHABLE);
        assertThat(none.decide(Failure.OVERLOAD_ANSWER, 1, false, false).action()).isEqualTo(Action.PASS_THROUGH);
        assertThat(none.decide(Failure.STALE_CONNECTION, 1, false, false).action()).isEqualTo(Action.RESEND_SAME_NODE);
    }

    @ParameterizedTest
    @EnumSource(Failure.class)
    void onlyAFailedConnectHoldsAgainstTheNode(Failure failure) {
        assertThat(RetryPolicy.holdsAgainstNode(failure)).isEqualTo(failure == Failure.CONNECT_FAILED);
    }
}
