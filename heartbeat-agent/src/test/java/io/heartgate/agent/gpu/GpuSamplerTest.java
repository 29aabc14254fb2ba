package io.heartgate.agent.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Gpu;
import io.heartgate.testkit.MutableClock;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class GpuSamplerTest {

    private static final List<Gpu> ONE = List.of(new Gpu("NVIDIA H200", 0.5, 1L, 2L));

    private final MutableClock clock = new MutableClock();
    private final AtomicInteger reads = new AtomicInteger();
    private final AtomicReference<IOException> failure = new AtomicReference<>();
    private final GpuSampler sampler = new GpuSampler(() -> {
        reads.incrementAndGet();
        if (failure.get() != null) {
            throw failure.get();
        }
        return ONE;
    }, Duration.ofSeconds(5), clock, "gpu-a");

    @Test
    void readsOncePerCadence() {
        assertThat(sampler.refreshIfDue()).isTrue();
        clock.advance(Duration.ofMillis(4999));
        assertThat(sampler.refreshIfDue()).isFalse();
        clock.advance(Duration.ofMillis(1));
        assertThat(sampler.refreshIfDue()).isTrue();
        assertThat(reads).hasValue(2);
        assertThat(sampler.current()).isEqualTo(ONE);
    }

    @Test
    void dropsFiguresOlderThanThreeCadences() {
        sampler.refreshIfDue();
        clock.advance(Duration.ofSeconds(15));
        assertThat(sampler.current()).isEqualTo(ONE);
        clock.advance(Duration.ofMillis(1));
        assertThat(sampler.current()).isEmpty();
    }

    @Test
    void omitsFiguresWhileReadsFailAndRecovers() {
        sampler.refreshIfDue();
        failure.set(new IOException("NVIDIA-SMI has failed"));
        clock.advance(Duration.ofSeconds(5));
        sampler.refreshIfDue();
        assertThat(sampler.current()).isEmpty();

        failure.set(null);
        clock.advance(Duration.ofSeconds(5));
        sampler.refreshIfDue();
        assertThat(sampler.current()).isEqualTo(ONE);
    }
}
