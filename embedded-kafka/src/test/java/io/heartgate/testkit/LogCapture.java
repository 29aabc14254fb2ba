package io.heartgate.testkit;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.Locale;
import org.slf4j.LoggerFactory;

/**
 * Records every log event of the test JVM while open, with the Kafka client's logger at the level
 * the programs' own logback configurations give it (ERROR) and their turbo filter installed, so a
 * test sees what an operator's log would show. Restores both on {@link #close()}.
 */
public final class LogCapture implements AutoCloseable {

    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    private final Logger kafka = (Logger) LoggerFactory.getLogger("org.apache.kafka");
    private final Level kafkaLevel;
    private final TurboFilter filter;

    /** Starts recording, with {@code programFilter} (the programs' turbo filter) installed. */
    public LogCapture(TurboFilter programFilter) {
        this.filter = programFilter;
        kafkaLevel = kafka.getLevel();
        kafka.setLevel(Level.ERROR);
        filter.start();
        root.getLoggerContext().addTurboFilter(filter);
        appender.start();
        root.addAppender(appender);
    }

    /** Returns the events so far. */
    public List<ILoggingEvent> events() {
        return List.copyOf(appender.list);
    }

    /** Returns the WARN and ERROR events that are the Kafka client's or mention credentials or authentication. */
    public List<ILoggingEvent> aboutCredentials() {
        return events().stream()
                .filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                .filter(e -> e.getLoggerName().startsWith("org.apache.kafka")
                        || e.getFormattedMessage().contains("credentials")
                        || e.getFormattedMessage().toLowerCase(Locale.ROOT).contains("authentic"))
                .toList();
    }

    /** Returns whether some event's message or exception contains {@code text}. */
    public boolean anyContains(String text) {
        return events().stream().anyMatch(e -> e.getFormattedMessage().contains(text)
                || (e.getThrowableProxy() != null && String.valueOf(e.getThrowableProxy().getMessage()).contains(text)));
    }

    @Override
    public void close() {
        root.detachAppender(appender);
        root.getLoggerContext().getTurboFilterList().remove(filter);
        kafka.setLevel(kafkaLevel);
    }
}
