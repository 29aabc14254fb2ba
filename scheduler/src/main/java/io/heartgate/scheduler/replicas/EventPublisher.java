package io.heartgate.scheduler.replicas;

import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.Signature;
import io.heartgate.scheduler.discovery.RestartPoint;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends what the {@link Outbox} gathered, on its own thread, never on an event loop: each
 * ejection, readmission and placement as soon as it comes, the usage of every key at most every
 * {@link #USAGE_EVERY_MS} ms in one record, and this replica's heartbeat every interval. Records
 * are signed with the first key of {@code --heartbeat-keys} when there is one. Usage is not
 * reported while the topic cannot be reached (the replica holds its share of each limit then), and
 * a report Kafka failed to store is not sent again: the others learn of neither.
 */
final class EventPublisher implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(EventPublisher.class);
    /** The longest usage waits before it is reported: the lag in every other replica's buckets. */
    static final long USAGE_EVERY_MS = 100;

    private final Producer<byte[], byte[]> producer;
    private final String topic;
    private final Outbox outbox;
    private final EventCodec codec;
    private final HeartbeatSigner signer;
    private final ReplicaView view;
    private final Clock clock;
    private final Beat beat;
    private final LongAdder sent = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private volatile boolean closing;
    private boolean failing;
    /** This process's records, numbered from 1: a record written again has a number already seen. */
    private long seq;

    /**
     * What this replica's heartbeat says, and how often it is sent: {@code restartPoint} what its node
     * table tells a replica starting, {@code null} while the table is not complete.
     */
    record Beat(String version, String address, IntSupplier queueDepth, long intervalMs,
                Supplier<RestartPoint> restartPoint) {
    }

    EventPublisher(Producer<byte[], byte[]> producer, String topic, Outbox outbox, EventCodec codec,
                   HeartbeatSigner signer, ReplicaView view, Clock clock, Beat beat) {
        this.producer = producer;
        this.topic = topic;
        this.outbox = outbox;
        this.codec = codec;
        this.signer = signer;
        this.view = view;
        this.clock = clock;
        this.beat = beat;
    }

    /** Returns the producer settings: small records sent at once, bounded waits, the operator's TLS and SASL. */
    static Map<String, Object> producerConfig(String bootstrap, String clientId, KafkaSettings operator) {
        Map<String, Object> c = new HashMap<>(operator.propertiesFor(ProducerConfig.configNames()));
        c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        c.put(ProducerConfig.ACKS_CONFIG, "1");
        c.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        // An ejection should reach the other replicas within milliseconds, not wait for a batch.
        c.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        c.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 4L * 1024 * 1024);
        // The publisher's thread waits at most this long for metadata while Kafka is away.
        c.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 500);
        c.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 2_000);
        c.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 5_000);
        c.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, 50L);
        c.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 500L);
        c.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50L);
        c.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 500L);
        return c;
    }

    static Producer<byte[], byte[]> producer(String bootstrap, String clientId, KafkaSettings operator) {
        return new KafkaProducer<>(producerConfig(bootstrap, clientId, operator));
    }

    @Override
    public void run() {
        long nextUsage = clock.millis() + USAGE_EVERY_MS;
        long nextBeat = clock.millis();
        while (!closing) {
            try {
                long now = clock.millis();
                if (now >= nextBeat) {
                    nextBeat = now + beat.intervalMs();
                    RestartPoint p = beat.restartPoint().get();
                    send(new GatewayEvent.ReplicaBeat(view.self(), now, beat.version(), beat.address(),
                            beat.queueDepth().getAsInt(), beat.intervalMs(), p == null ? -1 : p.at().toEpochMilli(),
                            p == null ? -1 : p.longestNodeIntervalMs()));
                }
                if (now >= nextUsage) {
                    nextUsage = now + USAGE_EVERY_MS;
                    GatewayEvent.Usage usage = outbox.takeUsage();
                    // Granted while this replica held its share: the share bounded it already, and
                    // debiting it on the others once Kafka is back would refuse the key for as long.
                    if (usage != null && !view.degraded()) {
                        send(usage);
                    }
                }
                GatewayEvent e = outbox.next(Math.max(1, Math.min(nextUsage, nextBeat) - clock.millis()));
                while (e != null) {
                    send(e);
                    e = outbox.next();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                // A send refused at once (metadata not reachable within max.block.ms): reported as a failure.
                delivered(false, e);
            }
        }
    }

    private void send(GatewayEvent e) {
        byte[] key = codec.key(e);
        byte[] value = codec.encode(e, ++seq);
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key, value);
        if (signer != null) {
            Signature s = signer.sign(key, value);
            r.headers().add(HeartbeatSigner.KEY_ID_HEADER, s.keyIdHeader())
                    .add(HeartbeatSigner.SIGNATURE_HEADER, s.signatureHeader());
        }
        producer.send(r, (meta, ex) -> delivered(ex == null, ex));
    }

    private void delivered(boolean ok, Exception ex) {
        if (ok) {
            sent.increment();
        } else {
            failed.increment();
        }
        view.published(ok);
        synchronized (this) {
            if (!ok && !failing && ex instanceof AuthenticationException) {
                log.debug("Gateway events: Kafka refuses the credentials: {}", ex.getMessage()); // discovery says it
            } else if (!ok && !failing) {
                log.warn("Gateway events: cannot write to {} ({}); limits fall back to this replica's share until "
                        + "Kafka takes them again", topic, ex == null ? "?" : ex.toString());
            } else if (ok && failing) {
                log.info("Gateway events: {} takes this replica's reports again", topic);
            }
            failing = !ok;
        }
    }

    /** Stops the loop ({@code thread} runs it, or {@code null} before it started) after a last "left" record, then closes the producer. */
    void close(Thread thread) {
        closing = true;
        if (thread != null) {
            thread.interrupt();
            try {
                thread.join(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            GatewayEvent.Usage usage = outbox.takeUsage();
            if (usage != null) {
                send(usage);
            }
            send(new GatewayEvent.ReplicaLeft(view.self(), clock.millis()));
            producer.flush();
        } catch (RuntimeException e) {
            log.debug("Gateway events: last records not sent: {}", e.toString());
        }
        producer.close(Duration.ofSeconds(2));
    }

    /** Returns how many records Kafka stored. */
    long sent() {
        return sent.sum();
    }

    /** Returns how many records could not be stored. */
    long failed() {
        return failed.sum();
    }
}
