package io.heartgate.scheduler.proxy;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import java.time.Duration;

/**
 * Configures the proxy.
 *
 * @param bind address to listen on
 * @param port port (0 = any free port)
 * @param maxBodyBytes largest request body accepted; larger: 413
 * @param retries other nodes tried when a node cannot be reached
 * @param connectTimeout time to open a connection to a node
 * @param firstByteTimeout time from sending a request to the response head; long, for LLM queues
 * @param idleTimeout longest pause between two chunks of a response
 * @param drainTimeout how long in-flight requests may finish on shutdown
 * @param ejectAfter consecutive connect failures that eject a node
 * @param ejectFor first ejection period; doubles with each ejection in a row, up to 5 minutes
 * @param eventLoops proxy event loops (threads)
 * @param transport the event loops' I/O transport; {@link Transport#AUTO} takes the best available
 * @param keepAliveTimeout how long a client connection may sit idle between requests before the
 *     proxy closes it (nginx's {@code keepalive_timeout}, 75 s there too)
 * @param allowUpstream the addresses nodes may have; checked on every heartbeat and before every connect
 * @param headerTimeout how long a client may take to send a request's head, from its first byte
 *     ({@code --header-timeout}); then 408 and the connection closes (slowloris)
 * @param bodyTimeout how long a client may take to send a request's body, from the end of its head
 *     ({@code --body-timeout}); then 408 and the connection closes (a trickled body)
 * @param maxConnections client connections the proxy holds at once; one more is closed on accept
 *     ({@code --max-connections})
 * @param allowModelManagement whether Ollama's model-management calls ({@code /api/pull} and the
 *     like) go to the node their {@code X-Heartgate-Node} header names ({@code --allow-model-management});
 *     off, they are refused with 405
 * @param stallTimeout how long a node may answer nothing while a request waits on it and another node
 *     serving that model answers, before it is ejected as stalled ({@code --stall-timeout}); zero turns the rule off
 * @param maxQueue requests that may wait per model in the gateway queue while every node for it is at
 *     capacity ({@code --max-queue}); 0 answers 503 at once
 * @param queueTimeout the longest a request waits in the gateway queue ({@code --queue-timeout})
 * @param forceUsage whether OpenAI streaming requests are sent asking for
 *     {@code stream_options.include_usage}, so that their tokens are counted ({@code --force-usage})
 * @param reserveSlots free slots of a model's nodes kept for callers that are not flooding it
 *     ({@code --reserve-slots}); 0 uses every free slot
 * @param migrateStreams how many times one streamed answer cut by its node may move to another node
 *     ({@code --migrate-streams}); 0 cuts such streams as the node did
 */
public record ProxyConfig(String bind, int port, long maxBodyBytes, int retries, Duration connectTimeout,
                          Duration firstByteTimeout, Duration idleTimeout, Duration drainTimeout, int ejectAfter,
                          Duration ejectFor, int eventLoops, Transport transport,
                          Duration keepAliveTimeout, UpstreamAllowList allowUpstream, Duration headerTimeout,
                          Duration bodyTimeout, int maxConnections, boolean allowModelManagement,
                          Duration stallTimeout, int maxQueue, Duration queueTimeout, boolean forceUsage,
                          int reserveSlots, int migrateStreams) {

    /** Checks ranges; a bad value throws {@link InvalidSettingException} naming its component. */
    public ProxyConfig {
        if (port < 0 || port > 65535) {
            throw new InvalidSettingException("port", "must be 0 to 65535, was " + port);
        }
        if (maxBodyBytes < 1024) {
            throw new InvalidSettingException("maxBodyBytes", "must be at least 1KiB, was " + maxBodyBytes + " bytes");
        }
        if (retries < 0 || retries > 10) {
            throw new InvalidSettingException("retries", "must be 0 to 10, was " + retries);
        }
        positive("connectTimeout", connectTimeout);
        positive("firstByteTimeout", firstByteTimeout);
        positive("idleTimeout", idleTimeout);
        if (drainTimeout == null || drainTimeout.isNegative()) {
            throw new InvalidSettingException("drainTimeout", "must not be negative");
        }
        if (ejectAfter < 1) {
            throw new InvalidSettingException("ejectAfter", "must be at least 1, was " + ejectAfter);
        }
        positive("ejectFor", ejectFor);
        if (eventLoops < 1) {
            throw new InvalidSettingException("eventLoops", "must be at least 1, was " + eventLoops);
        }
        if (transport == null) {
            throw new InvalidSettingException("transport", "must be set");
        }
        positive("keepAliveTimeout", keepAliveTimeout);
        positive("headerTimeout", headerTimeout);
        positive("bodyTimeout", bodyTimeout);
        if (maxConnections < 1 || maxConnections > 1_000_000) {
            throw new InvalidSettingException("maxConnections", "must be 1 to 1000000, was " + maxConnections);
        }
        if (stallTimeout == null || stallTimeout.isNegative() || stallTimeout.toHours() > 24) {
            throw new InvalidSettingException("stallTimeout", "must be 0 (off) to 24h");
        }
        if (stallTimeout.toMillis() > 0 && stallTimeout.toMillis() < 1000) {
            throw new InvalidSettingException("stallTimeout", "must be 0 (off) or at least 1s");
        }
        if (maxQueue < 0 || maxQueue > 1_000_000) {
            throw new InvalidSettingException("maxQueue", "must be 0 to 1000000, was " + maxQueue);
        }
        positive("queueTimeout", queueTimeout);
        if (reserveSlots < 0 || reserveSlots > 100_000) {
            throw new InvalidSettingException("reserveSlots", "must be 0 to 100000, was " + reserveSlots);
        }
        if (migrateStreams < 0 || migrateStreams > 10) {
            throw new InvalidSettingException("migrateStreams", "must be 0 to 10, was " + migrateStreams);
        }
        if (allowUpstream == null) {
            throw new InvalidSettingException("allowUpstream", "must be set (UpstreamAllowList.ALLOW_ALL for none)");
        }
    }

    private static void positive(String setting, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new InvalidSettingException(setting, "must be positive");
        }
    }
}
