package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.time.Ticker;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The per-loop pool on embedded channels and a fake coarse clock. */
class UpstreamPoolTest {

    private final AtomicLong nowMs = new AtomicLong(10_000);
    private final Draining draining = new Draining();
    private final List<EmbeddedChannel> channels = new ArrayList<>();
    private final UpstreamPool pool = new UpstreamPool(h -> {
        EmbeddedChannel ch = new EmbeddedChannel(h);
        channels.add(ch);
        h.opened(ch, ch.newSucceededFuture());
    }, Ticker.ofMillis(nowMs::get), draining, new Targets());
    private final Target a = Target.of("http://10.0.0.1:8000");
    private final Target b = Target.of("http://10.0.0.2:8000");

    @AfterEach
    void tearDown() {
        channels.forEach(EmbeddedChannel::finishAndReleaseAll);
    }

    @Test
    void theMostRecentlyReleasedConnectionToATargetIsTakenFirstAndClosedOnesAreSkipped() {
        UpstreamConnection c1 = pool.connect(a);
        UpstreamConnection c2 = pool.connect(a);
        UpstreamConnection c3 = pool.connect(a);
        UpstreamConnection other = pool.connect(b);
        pool.release(c1);
        pool.release(c2);
        pool.release(c3);
        pool.release(other);
        channels.get(2).close(); // c3, closed by its node while idle

        assertThat(pool.acquire(a)).isSameAs(c2);
        assertThat(pool.acquire(a)).isSameAs(c1);
        assertThat(pool.acquire(a)).isNull();
        assertThat(pool.acquire(b)).isSameAs(other);
    }

    @Test
    void idleConnectionsAreClosedAfterSixtySecondsAtTheSecondlyPurge() {
        UpstreamConnection c = pool.connect(a);
        pool.release(c);

        nowMs.addAndGet(UpstreamPool.IDLE_KEEP_MS);
        pool.purge();
        assertThat(pool.idleCount()).isEqualTo(1);
        nowMs.addAndGet(1);
        pool.purge(); // within a second of the last purge: not run
        assertThat(pool.idleCount()).isEqualTo(1);
        nowMs.addAndGet(999);
        pool.purge();

        assertThat(pool.idleCount()).isZero();
        assertThat(channels.get(0).isActive()).isFalse();
    }

    @Test
    void nothingGoesBackToThePoolWhileDraining() {
        UpstreamConnection c = pool.connect(a);
        draining.begin();

        pool.release(c);

        assertThat(pool.idleCount()).isZero();
        assertThat(channels.get(0).isActive()).isFalse();
    }

    @Test
    void aNodeSpeakingOnAnIdleConnectionLosesIt() {
        UpstreamConnection c = pool.connect(a);
        pool.release(c);

        channels.get(0).writeInbound(Unpooled.wrappedBuffer(new byte[] {1}));

        assertThat(channels.get(0).isActive()).isFalse();
        assertThat(pool.acquire(a)).isNull();
    }
}
