package io.heartgate.protocol.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import org.slf4j.Marker;

/**
 * Drops the Kafka client's own line for each failed authentication ("Connection to node -1 failed
 * authentication due to: ..."), which it logs at ERROR on every retry: the agent and the scheduler
 * log such a failure themselves, once, with the same reason and what to check. Named in the
 * programs' logback configurations; every other Kafka line passes.
 */
public final class KafkaAuthNoise extends TurboFilter {

    @Override
    public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
        if (format != null && logger != null && logger.getName().startsWith("org.apache.kafka.")
                && format.contains("failed authentication due to")) {
            return FilterReply.DENY;
        }
        return FilterReply.NEUTRAL;
    }
}
