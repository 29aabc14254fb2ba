package io.heartgate.scheduler.replicas;

import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.HeartbeatVerifier;
import io.heartgate.protocol.signing.Verification;
import io.heartgate.scheduler.replicas.EventCodec.Refusal;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the gateway events topic on its own thread, every partition, with no consumer group: at
 * start from {@code lookBack} ago, so a replica started or restarted rebuilds its buckets, homes and
 * ejections from what the others wrote; then as records come. Records are checked (signature when
 * {@code --heartbeat-keys} is set, then {@link EventCodec}) and what is refused is counted by reason
 * and logged at most once a minute; the rest go to the {@link EventSink}. Its own records are read
 * back only for its heartbeat. Every second it asks the broker for the end offsets, which is how
 * the {@link ReplicaView} knows the topic is reachable.
 */
final class EventReader implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(EventReader.class);
    private static final Duration POLL = Duration.ofMillis(50);
    private static final Duration CONTACT_EVERY = Duration.ofSeconds(1);
    private static final Duration LOG_EVERY = Duration.ofMinutes(1);
    /** How much older than its broker timestamp a signed record's own time may be. */
    private static final long REPLAY_WINDOW_MS = 30_000;
    private static final Duration AUTH_RETRY_EVERY = Duration.ofSeconds(10);

    private final Consumer<byte[], byte[]> consumer;
    private final String topic;
    private final EventCodec codec;
    private final HeartbeatVerifier verifier;
    private final EventSink sink;
    private final ReplicaView view;
    private final Clock clock;
    private final Duration lookBack;
    private final Map<String, LongAdder> received = new HashMap<>();
    private final Map<Refusal, LongAdder> refused = new EnumMap<>(Refusal.class);
    private final Map<Refusal, Instant> loggedAt = new EnumMap<>(Refusal.class);
    /** Each replica's last record number read: one not above it is a record written again. */
    private final Map<String, Long> lastSeq = new HashMap<>();
    private Instant kafkaErrorLoggedAt = Instant.MIN;
    private Set<TopicPartition> assigned = Set.of();
    /** The end offsets seen at start, until the reader reaches them; then {@code null}. */
    private Map<TopicPartition, Long> catchUp;
    private Instant nextContact = Instant.MIN;
    private volatile boolean closing;
    private final CountDownLatch closed = new CountDownLatch(1);

    EventReader(Consumer<byte[], byte[]> consumer, String topic, EventCodec codec, HeartbeatVerifier verifier,
                EventSink sink, ReplicaView view, Clock clock, Duration lookBack) {
        this.consumer = consumer;
        this.topic = topic;
        this.codec = codec;
        this.verifier = verifier;
        this.sink = sink;
        this.view = view;
        this.clock = clock;
        this.lookBack = lookBack;
        for (String type : List.of("usage", "ejected", "held", "readmitted", "placed", "replica", "left")) {
            received.put(type, new LongAdder());
        }
        for (Refusal r : Refusal.values()) {
            refused.put(r, new LongAdder());
        }
    }

    @Override
    public void run() {
        try {
            while (!closing) {
                try {
                    step();
                } catch (WakeupException e) {
                    // closing
                } catch (TimeoutException e) {
                    log.debug("Gateway events: Kafka did not answer in time: {}", e.toString());
                } catch (AuthenticationException e) {
                    // Discovery says so, once, in a clear line and on /readyz; here only a retry, as rarely.
                    log.debug("Gateway events: Kafka refuses the credentials: {}", e.getMessage());
                    try {
                        closed.await(AUTH_RETRY_EVERY.toMillis(), TimeUnit.MILLISECONDS);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                } catch (KafkaException e) {
                    kafkaError(e);
                } catch (RuntimeException e) {
                    log.error("Gateway events: unexpected error; the reader carries on", e);
                }
            }
        } finally {
            try {
                consumer.close(Duration.ofSeconds(2));
            } catch (RuntimeException e) {
                log.debug("Closing the events consumer failed: {}", e.toString());
            }
        }
    }

    void step() {
        view.refresh(); // first: a step that fails on Kafka below must still let the view see the silence
        Instant now = clock.instant();
        if (!now.isBefore(nextContact)) {
            nextContact = now.plus(CONTACT_EVERY);
            checkPartitions();
            if (!assigned.isEmpty()) {
                consumer.endOffsets(assigned, Duration.ofMillis(500));
                view.contact();
            }
        }
        if (assigned.isEmpty()) {
            pause(); // no topic to read yet: try again at the next contact check, not in a spin
            return;
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(POLL)) {
            view.contact();
            handle(r);
        }
        if (catchUp != null && catchUp.entrySet().stream().allMatch(e -> consumer.position(e.getKey()) >= e.getValue())) {
            catchUp = null;
            view.caughtUp();
            log.info("Gateway events: caught up with {}", topic);
        }
    }

    private void checkPartitions() {
        List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofMillis(500));
        if (infos == null || infos.isEmpty()) {
            return;
        }
        Set<TopicPartition> all = new HashSet<>();
        infos.forEach(p -> all.add(new TopicPartition(topic, p.partition())));
        if (all.equals(assigned)) {
            return;
        }
        Set<TopicPartition> added = new HashSet<>(all);
        added.removeAll(assigned);
        if (assigned.isEmpty()) {
            // Asked before anything changes: when Kafka fails either, the whole set-up is tried again.
            Map<TopicPartition, Long> query = new HashMap<>();
            long from = Math.max(0, clock.millis() - lookBack.toMillis());
            added.forEach(tp -> query.put(tp, from));
            Map<TopicPartition, Long> ends = consumer.endOffsets(added);
            Map<TopicPartition, OffsetAndTimestamp> offsets = consumer.offsetsForTimes(query);
            consumer.assign(all);
            for (TopicPartition tp : added) {
                OffsetAndTimestamp o = offsets.get(tp);
                consumer.seek(tp, o != null ? o.offset() : ends.getOrDefault(tp, 0L));
            }
            assigned = Set.copyOf(all);
            catchUp = ends;
            log.info("Gateway events: reading {} partitions of {} from {} ago", all.size(), topic, lookBack);
        } else {
            consumer.assign(all);
            consumer.seekToBeginning(added);
            assigned = Set.copyOf(all);
        }
    }

    /** Checks and applies one record. */
    void handle(ConsumerRecord<byte[], byte[]> r) {
        long brokerMs = r.timestamp() >= 0 ? r.timestamp() : clock.millis();
        if (verifier != null) {
            Verification v = verifier.verify(r.key(), r.value(), header(r, HeartbeatSigner.KEY_ID_HEADER),
                    header(r, HeartbeatSigner.SIGNATURE_HEADER));
            if (v instanceof Verification.Refused no) {
                refuse(Refusal.SIGNATURE, no.rejection().toString(), r);
                return;
            }
        }
        EventCodec.Decoded d = codec.decode(r.key(), r.value());
        if (d instanceof EventCodec.Refused no) {
            refuse(no.why(), no.detail(), r);
            return;
        }
        GatewayEvent e = ((EventCodec.Event) d).event();
        long seq = ((EventCodec.Event) d).seq();
        if (verifier != null && e.sentAtMs() + REPLAY_WINDOW_MS < brokerMs) {
            refuse(Refusal.REPLAYED, "sent at " + e.sentAtMs() + ", stored at " + brokerMs, r);
            return;
        }
        Long last = lastSeq.get(e.replica());
        if (last != null && seq <= last) {
            refuse(Refusal.REPLAYED, "record " + seq + " of replica " + e.replica() + " read already", r);
            return;
        }
        if (last != null || lastSeq.size() < ReplicaView.MAX_REPLICAS) {
            lastSeq.put(e.replica(), seq);
        }
        received.get(type(e)).increment();
        long ageMs = Math.max(0, clock.millis() - brokerMs);
        if (e instanceof GatewayEvent.ReplicaBeat b) {
            if (ageMs < 3 * b.intervalMs()) {
                view.heard(b);
            }
        } else if (e instanceof GatewayEvent.ReplicaLeft left) {
            view.left(left.replica());
            lastSeq.remove(left.replica());
        } else if (!e.replica().equals(view.self()) || e instanceof GatewayEvent.Ejected
                || e instanceof GatewayEvent.Readmitted) {
            // A node's own ejections and readmissions too, read back in the topic's order: the last stands.
            sink.apply(e, ageMs);
        }
    }

    /** Logs a Kafka error at most once a minute (the rest at debug): a missing ACL would say it every second. */
    private void kafkaError(KafkaException e) {
        Instant now = clock.instant();
        if (!now.isBefore(kafkaErrorLoggedAt.plus(LOG_EVERY))) {
            kafkaErrorLoggedAt = now;
            log.warn("Gateway events: Kafka error, retrying (at most one such line a minute): {}", e.toString());
        } else {
            log.debug("Gateway events: Kafka error, retrying: {}", e.toString());
        }
        pause();
    }

    private void pause() {
        try {
            closed.await(POLL.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            closing = true;
        }
    }

    private static String type(GatewayEvent e) {
        if (e instanceof GatewayEvent.Usage) {
            return "usage";
        } else if (e instanceof GatewayEvent.Ejected) {
            return "ejected";
        } else if (e instanceof GatewayEvent.Held) {
            return "held";
        } else if (e instanceof GatewayEvent.Readmitted) {
            return "readmitted";
        } else if (e instanceof GatewayEvent.Placed) {
            return "placed";
        }
        return e instanceof GatewayEvent.ReplicaBeat ? "replica" : "left";
    }

    private void refuse(Refusal why, String detail, ConsumerRecord<byte[], byte[]> r) {
        refused.get(why).increment();
        Instant now = clock.instant();
        Instant last = loggedAt.get(why);
        if (last == null || !now.isBefore(last.plus(LOG_EVERY))) {
            loggedAt.put(why, now);
            log.warn("Gateway events: record refused ({}: {}); partition {} offset {} (at most one such line a minute)",
                    why, EventCodec.printable(detail), r.partition(), r.offset());
        }
    }

    /** Returns the value of {@code r}'s last header {@code name}, or {@code null}. */
    static byte[] header(ConsumerRecord<byte[], byte[]> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null ? null : h.value();
    }

    /** Returns the records read and applied, by type. */
    Map<String, LongAdder> received() {
        return received;
    }

    /** Returns the records refused, by reason. */
    Map<Refusal, LongAdder> refused() {
        return refused;
    }

    /** Stops the loop; it closes the consumer. */
    void close() {
        closing = true;
        closed.countDown();
        consumer.wakeup();
    }
}
