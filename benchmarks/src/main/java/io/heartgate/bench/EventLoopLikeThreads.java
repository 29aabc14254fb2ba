package io.heartgate.bench;

import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * JMH's benchmark threads made as Netty makes an event loop's ({@code -Djmh.executor=CUSTOM}): a
 * {@code FastThreadLocalThread} that cleans up after itself, the only kind of thread on which Netty
 * 4.2.18 recycles its pooled objects (outbound buffer entries, among others). On JMH's own threads the
 * in-memory request path would allocate what a real event loop recycles.
 */
public final class EventLoopLikeThreads extends ThreadPoolExecutor {

    /** The constructor JMH calls for a custom executor. */
    public EventLoopLikeThreads(int maxThreads, String prefix) {
        super(maxThreads, maxThreads, 0L, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                new DefaultThreadFactory(prefix));
    }
}
