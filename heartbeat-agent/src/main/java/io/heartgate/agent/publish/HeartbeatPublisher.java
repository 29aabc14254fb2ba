package io.heartgate.agent.publish;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.Signature;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes one node's heartbeats to Kafka, keyed by node id, latest-only: at most one heartbeat is
 * in flight, and a heartbeat due while the previous one is still unacknowledged (Kafka down) is
 * dropped instead of queued, so a Kafka outage never leaves a backlog of stale heartbeats to flush
 * in a burst when it ends. Logs the outage once and the recovery once. Thread-safe.
 */
public final class HeartbeatPublisher implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(HeartbeatPublisher.class);

    private final Producer<byte[], byte[]> producer;
    private final String topic;
    private final String nodeId;
    private final byte[] key;
    private final HeartbeatCodec codec = new HeartbeatCodec();
    private volatile boolean warnedTooLarge;
    private final AtomicBoolean inFlight = new AtomicBoolean();
    private final AtomicBoolean reachable = new AtomicBoolean(true);
    private final AtomicBoolean refused = new AtomicBoolean();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong skipped = new AtomicLong();

    private final Clock clock;
    private final HeartbeatSigner signer;
    private volatile String lastInstance;
    private volatile Instant lastAcknowledged;

    /** Creates a publisher over a producer it then owns (and closes). */
    public HeartbeatPublisher(Producer<byte[], byte[]> producer, String topic, String nodeId) {
        this(producer, topic, nodeId, Clock.systemUTC());
    }

    /** Creates a publisher that stamps acknowledgements with {@code clock}. */
    public HeartbeatPublisher(Producer<byte[], byte[]> producer, String topic, String nodeId, Clock clock) {
        this(producer, topic, nodeId, clock, null);
    }

    /**
     * Creates a publisher that signs every record, tombstones included, with {@code signer}'s key
     * (record headers {@value HeartbeatSigner#KEY_ID_HEADER} and {@value HeartbeatSigner#SIGNATURE_HEADER});
     * {@code null} sends them unsigned.
     */
    public HeartbeatPublisher(Producer<byte[], byte[]> producer, String topic, String nodeId, Clock clock,
                              HeartbeatSigner signer) {
        this.signer = signer;
        this.clock = clock;
        this.producer = producer;
        this.topic = topic;
        this.nodeId = nodeId;
        this.key = nodeId.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Returns the producer settings for heartbeats sent every {@code interval}, each with a one-line why.
     */
    public static Map<String, Object> producerConfig(String bootstrapServers, String nodeId, Duration interval) {
        return producerConfig(bootstrapServers, nodeId, interval, KafkaSettings.NONE);
    }

    /**
     * Returns the producer settings with the operator's client properties ({@code --kafka-config}:
     * TLS, SASL, and any tuning) over them; the bootstrap servers stay {@code bootstrapServers}.
     */
    public static Map<String, Object> producerConfig(String bootstrapServers, String nodeId, Duration interval,
                                                     KafkaSettings operator) {
        Map<String, Object> c = ownProducerConfig(bootstrapServers, nodeId, interval);
        c.putAll(operator.propertiesFor(ProducerConfig.configNames()));
        c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        return c;
    }

    private static Map<String, Object> ownProducerConfig(String bootstrapServers, String nodeId, Duration interval) {
        long intervalMs = interval.toMillis();
        long requestTimeoutMs = clamp(intervalMs, 1_000, 30_000);
        long lingerMs = 5;
        Map<String, Object> c = new HashMap<>();
        c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        c.put(ProducerConfig.CLIENT_ID_CONFIG, "heartgate-agent-" + nodeId);
        c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        // The leader's ack is enough for a message that the next heartbeat supersedes anyway.
        c.put(ProducerConfig.ACKS_CONFIG, "1");
        // Idempotence needs acks=all; a duplicate heartbeat is harmless (the scheduler orders by seq).
        c.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        // Small and uncompressed: one message of a few hundred bytes per interval.
        c.put(ProducerConfig.LINGER_MS_CONFIG, lingerMs);
        c.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
        // A bounded buffer: a heartbeat never waits behind old ones.
        c.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 1024L * 1024);
        // send() must not stall the heartbeat schedule when metadata is missing (Kafka down at start).
        c.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, clamp(intervalMs / 2, 100, 5_000));
        c.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) requestTimeoutMs);
        // Give up on a heartbeat within a few intervals: by then it is stale and a newer one is due.
        c.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
                (int) Math.max(2 * intervalMs, requestTimeoutMs + lingerMs));
        // Reconnect quickly once Kafka is back, so heartbeats resume within an interval or two.
        c.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, 50L);
        c.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, clamp(intervalMs / 2, 100, 1_000));
        c.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50L);
        c.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, clamp(intervalMs / 2, 100, 1_000));
        return c;
    }

    /**
     * Encodes {@code heartbeat}; when its model descriptions make it larger than a scheduler accepts
     * (only with hundreds of models and long texts), sends it without them, with one WARN: the
     * names, the load and the loaded models matter more than sizes and digests.
     */
    byte[] encodeWithinLimit(Heartbeat heartbeat) {
        byte[] bytes = codec.encode(heartbeat);
        if (bytes.length <= HeartbeatCodec.MAX_MESSAGE_BYTES || heartbeat.modelInfo().isEmpty()) {
            return bytes;
        }
        if (!warnedTooLarge) {
            warnedTooLarge = true;
            log.warn("Node {} heartbeat is {} bytes with the descriptions of its {} models, over the {} a scheduler "
                    + "accepts: sent without them", nodeId, bytes.length, heartbeat.modelInfo().size(),
                    HeartbeatCodec.MAX_MESSAGE_BYTES);
        }
        return codec.encode(heartbeat.toBuilder().modelInfo(List.of()).build());
    }

    /**
     * Sends a heartbeat unless the previous one is still in flight; returns whether it was handed to
     * the producer. Never throws.
     */
    public boolean publish(Heartbeat heartbeat) {
        if (!inFlight.compareAndSet(false, true)) {
            skipped.incrementAndGet();
            log.debug("Node {} heartbeat {} dropped: the previous one is still unacknowledged",
                    nodeId, heartbeat.seq());
            return false;
        }
        try {
            lastInstance = heartbeat.instance();
            producer.send(record(encodeWithinLimit(heartbeat)), (metadata, error) -> {
                inFlight.set(false);
                if (error == null) {
                    delivered();
                } else {
                    failed(error);
                }
            });
            return true;
        } catch (KafkaException | IllegalStateException e) {
            // IllegalStateException: the producer was closed under us during shutdown.
            inFlight.set(false);
            failed(e);
            return false;
        }
    }

    /**
     * Publishes a tombstone (null value) so the node leaves every scheduler's table at once, and waits
     * up to {@code timeout} for Kafka to acknowledge it. Returns whether it was acknowledged.
     */
    public boolean publishTombstone(Duration timeout) {
        try {
            producer.send(record(null)).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            log.info("Node {} tombstone published: it leaves the schedulers' tables now", nodeId);
            return true;
        } catch (ExecutionException | TimeoutException | KafkaException e) {
            log.warn("Node {} tombstone not acknowledged within {} ms: {}; schedulers will expire it instead",
                    nodeId, timeout.toMillis(), e.toString());
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Returns the record of {@code value} (null: a tombstone), signed when there is a signer; a signed
     * tombstone names the instance leaving and the time, so that it cannot be replayed later.
     */
    private ProducerRecord<byte[], byte[]> record(byte[] value) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key, value);
        if (signer != null) {
            Signature s;
            if (value == null) {
                String instance = lastInstance == null ? "-" : lastInstance;
                byte[] tombstone = (instance + " " + clock.millis()).getBytes(StandardCharsets.US_ASCII);
                s = signer.signTombstone(key, tombstone);
                r.headers().add(HeartbeatSigner.TOMBSTONE_HEADER, tombstone);
            } else {
                s = signer.sign(key, value);
            }
            r.headers().add(HeartbeatSigner.KEY_ID_HEADER, s.keyIdHeader())
                    .add(HeartbeatSigner.SIGNATURE_HEADER, s.signatureHeader());
        }
        return r;
    }

    /** Returns heartbeats acknowledged by Kafka. */
    public long sentCount() {
        return sent.get();
    }

    /** Returns heartbeats Kafka did not acknowledge in time. */
    public long failedCount() {
        return failed.get();
    }

    /** Returns heartbeats dropped because the previous one was still in flight. */
    public long skippedCount() {
        return skipped.get();
    }

    /** Returns whether the last send succeeded. */
    public boolean kafkaReachable() {
        return reachable.get();
    }

    /** Closes the producer, waiting at most {@code timeout} for anything still in flight. */
    public void close(Duration timeout) {
        producer.close(timeout);
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(1));
    }

    /** Returns when Kafka last acknowledged a heartbeat, or {@code null} if it never did. */
    public Instant lastAcknowledged() {
        return lastAcknowledged;
    }

    private void delivered() {
        sent.incrementAndGet();
        lastAcknowledged = clock.instant();
        refused.set(false);
        if (reachable.compareAndSet(false, true)) {
            log.info("Node {} reaches Kafka again; heartbeats resumed", nodeId);
        }
    }

    private void failed(Exception error) {
        failed.incrementAndGet();
        boolean wasReachable = reachable.compareAndSet(true, false);
        if (error instanceof AuthenticationException || error.getCause() instanceof AuthenticationException) {
            // Often after a first timeout: the refusal comes once the handshake is done. Said once.
            if (refused.compareAndSet(false, true)) {
                log.error("Node {}: Kafka refuses the agent's credentials ({}); check --kafka-config. Heartbeats "
                        + "are dropped until it accepts them", nodeId, error.getMessage());
            }
        } else if (wasReachable) {
            log.warn("Node {} cannot reach Kafka ({}); heartbeats are dropped, not queued, until it is back",
                    nodeId, error.toString());
        }
    }

    private static long clamp(long value, long min, long max) {
        return Math.max(min, Math.min(max, value));
    }
}
