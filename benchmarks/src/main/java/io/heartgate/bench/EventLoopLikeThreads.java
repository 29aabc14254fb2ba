package io.heartgate.bench;

import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The JMH executor ({@code -Djmh.executor=CUSTOM}) whose threads are Netty
 * {@code FastThreadLocalThread}s that clean up after themselves, so the in-memory request path
 * recycles Netty's pooled objects (outbound buffer entries, among others) as it does on a real
 * event loop; on JMH's own threads it would allocate them.
 */
public final class EventLoopLikeThreads extends ThreadPoolExecutor {

    /** The constructor JMH calls for a custom executor. */
    public EventLoopLikeThreads(int maxThreads, String prefix) {
        super(maxThreads, maxThreads, 0L, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                new DefaultThreadFactory(prefix));
    }
}
