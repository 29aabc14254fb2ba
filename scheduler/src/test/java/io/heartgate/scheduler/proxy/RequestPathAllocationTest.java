package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.management.ThreadMXBean;
import io.heartgate.scheduler.config.ProxyConfigBuilder;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The allocation budget of the request path: bytes allocated per plain chat completion through the
 * whole proxy on in-memory channels ({@link InMemoryProxy}), counted by the JVM per thread over a
 * few thousand requests. Bytes, never time: a count this machine's load cannot move, so a change
 * that makes every request allocate more fails here instead of hiding in benchmark noise.
 */
class RequestPathAllocationTest {

    /**
     * The most a plain chat completion may allocate, in bytes: about a tenth over what the commit
     * that set it measured here (3,674 with Netty 4.2.18 on a thread Netty recycles on). Counted after
     * {@link #WARM_UP} requests, where the JIT has not removed all it removes at steady state
     * (docs/BENCHMARKS.md gives both figures), so the budget holds for interpreted, C1 and C2 code alike.
     */
    static final long PLAIN_BUDGET_BYTES = 4_050;

    private static final int WARM_UP = 20_000;
    private static final int MEASURED = 5_000;

    @Test
    void aPlainChatCompletionAllocatesWithinTheBudget() {
        try (InMemoryProxy proxy = InMemoryProxy.of(InMemoryProxy.Scenario.CHAT, new ProxyConfigBuilder().build())) {
            long[] measured = new long[1];
            // As on an event loop: Netty 4.2.18 recycles its pooled objects only on such threads.
            FastThreadLocalThread.runWithFastThreadLocal(() -> measured[0] = bytesPerRequest(proxy));
            long perRequest = measured[0];
            assertThat(perRequest).as("bytes allocated per plain chat completion").isPositive()
                    .isLessThanOrEqualTo(PLAIN_BUDGET_BYTES);
        }
    }

    @ParameterizedTest
    @EnumSource(InMemoryProxy.Scenario.class)
    void everyScenarioIsAnsweredWhole(InMemoryProxy.Scenario scenario) {
        try (InMemoryProxy proxy = InMemoryProxy.of(scenario, new ProxyConfigBuilder().build())) {
            long first = proxy.exchange();
            for (int i = 0; i < 50; i++) {
                assertThat(proxy.exchange()).as("answer bytes of call %d", i).isEqualTo(first);
            }
            assertThat(first).isGreaterThan(300L * proxy.requestsPerCall());
        }
    }

    static long bytesPerRequest(InMemoryProxy proxy) {
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int i = 0; i < WARM_UP; i++) {
            proxy.exchange();
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < MEASURED; i++) {
            proxy.exchange();
        }
        return (threads.getCurrentThreadAllocatedBytes() - before) / ((long) MEASURED * proxy.requestsPerCall());
    }
}
