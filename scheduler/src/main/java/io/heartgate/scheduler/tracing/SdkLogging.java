package io.heartgate.scheduler.tracing;

import java.util.logging.Logger;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * Sends what the OpenTelemetry SDK logs through java.util.logging (an export that failed, spans
 * dropped) to SLF4J, so its lines keep the scheduler's format, JSON included. Only the SDK's own
 * loggers are bridged; the JVM's root logger is left alone.
 */
final class SdkLogging {

    /** Held so that its handler stays: java.util.logging keeps loggers only weakly. */
    private static final Logger SDK = Logger.getLogger("io.opentelemetry");

    private SdkLogging() {
    }

    /** Bridges the SDK's loggers, once. */
    static synchronized void toSlf4j() {
        if (SDK.getUseParentHandlers()) {
            SDK.addHandler(new SLF4JBridgeHandler());
            SDK.setUseParentHandlers(false);
        }
    }
}
