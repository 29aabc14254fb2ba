package io.heartgate.scheduler.discovery;

import io.heartgate.protocol.HeartbeatRules;
import io.heartgate.protocol.Rule;
import io.heartgate.protocol.signing.HeartbeatVerifier;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads every heartbeat into the {@link NodeTable} on one dedicated thread: the table's only writer.
 *
 * <p>Every replica assigns itself all partitions (no consumer group, so replicas never split the
 * heartbeats and never pause for a rebalance) and picks up partitions added later. At start it seeks
 * each partition to "now minus the look-back", or less far back where the replicas' newest
 * {@link RestartPoint} allows, so the table is rebuilt from recent heartbeats at once; it is
 * {@linkplain DiscoveryStatus#caughtUp() caught up} when it has read to the end offsets it saw at
 * start (and on, a round at a time, while a round takes longer than the shortest interval). When
 * Kafka stays silent for longer than the shortest node expiry, it freezes expiry (self-preservation)
 * and thaws it once it has caught up again.
 *
 * <p>Errors come in tiers: authorization, unsupported versions and invalid topics stop the loop
 * (nothing will fix them without an operator); refused credentials are logged once and retried every
 * {@code AUTH_RETRY_EVERY}, with the reason on {@code /readyz}; any other {@link KafkaException} is
 * logged and the loop goes on. What each record does to the table is {@link HeartbeatRecords}'.
 */
public final class HeartbeatConsumer implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(HeartbeatConsumer.class);
    private static final Duration POLL = Duration.ofMillis(100);
    private static final Duration CONTACT_CHECK_EVERY = Duration.ofSeconds(1);
    private static final Duration CONTACT_CHECK_TIMEOUT = Duration.ofMillis(500);
    /** How often a node due to expire may make discovery ask the broker whether it is there. */
    private static final Duration URGENT_CHECK_EVERY = Duration.ofMillis(200);
    /** The shortest expiry a node can have (the rules' shortest interval): scans for expiry wait no longer. */
    private static final Duration SHORTEST_EXPIRY = Duration.ofMillis(HeartbeatRules.MIN_INTERVAL_MS);
    private static final Duration PARTITION_CHECK_EVERY = Duration.ofSeconds(10);
    private static final Duration AUTH_RETRY_EVERY = Duration.ofSeconds(10);
    /** A start-up catch-up round shorter than this ends it, whatever the intervals: a few polls. */
    private static final Duration ROUND = POLL.multipliedBy(4);

    private final Consumer<byte[], byte[]> consumer;
    private final String topic;
    private final NodeTable table;
    private final Clock clock;
    private final Duration lookBack;
    private final Duration defaultExpiry;
    private final DiscoveryStats stats;
    private final HeartbeatRecords recordHandler;
    private volatile DiscoveryStatus status = DiscoveryStatus.STARTING;
    private volatile boolean closing;
    private final CountDownLatch closed = new CountDownLatch(1);
    private String refusedBy;
    private Set<TopicPartition> assigned = Set.of();
    private Instant nextUrgentCheck = Instant.MIN;
    /** When the table is next scanned for expiry; a node goes at most {@link #SHORTEST_EXPIRY} late. */
    private Instant nextExpiryScan = Instant.MIN;
    /** The topic is known read up to this time: expiry goes no further. */
    private Instant heardAt = Instant.MIN;
    /** End offsets asked for in a contact check, not yet reached: {@link #heardAt} once they are. */
    private final CatchUp heard = new CatchUp();
    /** End offsets to read to before the table is complete: at start, and after an outage. */
    private final CatchUp catchUp = new CatchUp();
    private volatile RestartPoint ownPoint;
    private volatile Supplier<Optional<RestartPoint>> restartPoints = Optional::empty;
    private Instant lastContact = Instant.MIN;
    private Instant nextContactCheck = Instant.MIN;
    private Instant nextPartitionCheck = Instant.MIN;
    private long lag = -1;
    private boolean caughtUp;

    /**
     * Creates the loop over a consumer it then owns, accepting only heartbeats whose URL
     * {@code allowUpstream} allows (the others are rejected as {@link Rule#URL_NOT_ALLOWED}) and, with
     * a {@code verifier}, dropping every record, tombstones included, not signed by one of its keys
     * for its node ({@code --heartbeat-keys}); {@code null} accepts unsigned records.
     *
     * @param lookBack how far back to read at start at most; at least the longest node expiry
     * @param defaultExpiry the silence that triggers self-preservation while the table is empty
     */
    public HeartbeatConsumer(Consumer<byte[], byte[]> consumer, String topic, NodeTable table, Clock clock,
                             Duration lookBack, Duration defaultExpiry, DiscoveryStats stats,
                             UpstreamAllowList allowUpstream, HeartbeatVerifier verifier) {
        this.recordHandler = new HeartbeatRecords(table, stats, allowUpstream, verifier);
        this.consumer = consumer;
        this.topic = topic;
        this.table = table;
        this.clock = clock;
        this.lookBack = lookBack;
        this.defaultExpiry = defaultExpiry;
        this.stats = stats;
        table.replaying(true); // until the start-up catch-up is done
    }

    /** Reads less than the look-back by the replicas' newest point from {@code points}, asked at start; call before run. */
    public void restartPoints(Supplier<Optional<RestartPoint>> points) {
        this.restartPoints = points;
    }

    /** Returns what this replica's table tells a starting one, {@code null} while it is not complete; any thread. */
    public RestartPoint ownRestartPoint() {
        return ownPoint;
    }

    /** Returns where discovery stands; any thread. */
    public DiscoveryStatus status() {
        return status;
    }

    /** Asks the loop to stop; it closes the consumer and returns from {@link #run()}. Any thread. */
    public void close() {
        closing = true;
        closed.countDown();
        consumer.wakeup();
    }

    @Override
    public void run() {
        try {
            while (!closing) {
                try {
                    step();
                } catch (WakeupException e) {
                    if (!closing) {
                        log.debug("Discovery woken up without closing; carrying on");
                    }
                } catch (AuthenticationException e) {
                    refused(e);
                } catch (AuthorizationException | UnsupportedVersionException | InvalidTopicException e) {
                    log.error("Discovery stopped: Kafka refuses us for good ({}); the table keeps its nodes "
                            + "but nothing new arrives", e.toString());
                    table.setFrozen(true);
                    status = new DiscoveryStatus(caughtUp, true, lastContact, lag, e.toString(), null);
                    return;
                } catch (KafkaException e) {
                    log.warn("Discovery: Kafka error, retrying: {}", e.toString());
                } catch (RuntimeException e) {
                    log.error("Discovery: unexpected error; the loop carries on", e);
                }
            }
        } finally {
            try {
                consumer.close(Duration.ofSeconds(2));
            } catch (RuntimeException e) {
                log.debug("Closing the consumer failed: {}", e.toString());
            }
        }
    }

    /** Runs one iteration of the loop. */
    void step() {
        Instant now = clock.instant();
        if (assigned.isEmpty() || !now.isBefore(nextPartitionCheck)) {
            nextPartitionCheck = now.plus(PARTITION_CHECK_EVERY);
            refreshPartitions();
            if (assigned.isEmpty()) {
                checkSelfPreservation(clock.instant());
                table.publishIfDue();
                return;
            }
        }
        ConsumerRecords<byte[], byte[]> records = consumer.poll(POLL);
        now = clock.instant();
        if (!records.isEmpty()) {
            lastContact = now;
        }
        for (ConsumerRecord<byte[], byte[]> r : records) {
            recordHandler.handle(r, now);
        }
        if (!now.isBefore(nextContactCheck)) {
            nextContactCheck = now.plus(CONTACT_CHECK_EVERY);
            checkContact();
        }
        checkCaughtUp();
        checkHeard();
        checkSelfPreservation(clock.instant());
        // A node goes only once the topic is known read up to a time after its expiry passed: when
        // it is due and that is not known yet, ask the broker for its end offsets at once, so an
        // outage never takes the nodes whose expiry falls in the moment before it is noticed.
        now = clock.instant();
        if (!now.isBefore(nextExpiryScan)) {
            expireDue(now);
        }
        boolean published = table.publishIfDue();
        if (!caughtUp || table.frozen() || heardAt.equals(Instant.MIN)) {
            ownPoint = null;
        } else if (published || ownPoint == null) { // the snapshot holds every record before heardAt
            ownPoint = new RestartPoint("", heardAt, table.snapshot().longestIntervalMs());
        }
        if (refusedBy != null) {
            log.info("Discovery: Kafka accepts the scheduler's credentials again");
            refusedBy = null;
        }
        status = new DiscoveryStatus(caughtUp, table.frozen(), lastContact, lag, null, null);
    }

    /**
     * Kafka refused our credentials: one clear line the first time (not one per retry), the reason on
     * {@code /readyz}, and another try every {@link #AUTH_RETRY_EVERY}, since credentials are often
     * fixed on the broker's side (a SCRAM user created late, a certificate renewed) without a restart here.
     */
    private void refused(AuthenticationException e) {
        String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        stats.authRefused();
        if (refusedBy == null) {
            log.error("Discovery: Kafka refuses the scheduler's credentials ({}); check --kafka-config. Trying again "
                    + "every {} s; /readyz says why meanwhile", why, AUTH_RETRY_EVERY.toSeconds());
        } else {
            log.debug("Discovery: Kafka still refuses the scheduler's credentials: {}", why);
        }
        refusedBy = why;
        status = new DiscoveryStatus(caughtUp, table.frozen(), lastContact, lag, null, why);
        try {
            closed.await(AUTH_RETRY_EVERY.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            closing = true;
        }
    }

    private void refreshPartitions() {
        List<PartitionInfo> infos;
        try {
            infos = consumer.partitionsFor(topic, CONTACT_CHECK_TIMEOUT.multipliedBy(4));
        } catch (TimeoutException e) {
            log.debug("Discovery: no partition metadata for {} yet: {}", topic, e.toString());
            return;
        }
        if (infos == null || infos.isEmpty()) {
            return;
        }
        // Not proof of contact: the client may answer partitionsFor from cached metadata.
        Set<TopicPartition> all = new HashSet<>();
        for (PartitionInfo p : infos) {
            all.add(new TopicPartition(topic, p.partition()));
        }
        if (all.equals(assigned)) {
            return;
        }
        Set<TopicPartition> added = new HashSet<>(all);
        added.removeAll(assigned);
        boolean first = assigned.isEmpty();
        consumer.assign(all);
        assigned = Set.copyOf(all);
        if (first) {
            Instant asked = clock.instant();
            // The restart point is read first (up to a few seconds): "now" is taken after it.
            catchUp.to(StartOffsets.seekToStart(consumer, topic, added, restartPoints.get(), clock.instant(),
                    lookBack, table.missedHeartbeats()), asked);
        } else {
            // Partitions added to a live topic hold only new heartbeats: read them from the start.
            consumer.seekToBeginning(added);
            log.info("Discovery picked up {} new partitions of {} (now {})", added.size(), topic, all.size());
        }
    }

    /**
     * Notes that the topic is read up to when the pending end offsets were asked for, once every
     * partition's position has reached them: a node silent by then really sent nothing.
     */
    private void checkHeard() {
        if (!heard.reached(consumer, assigned)) {
            return;
        }
        heardAt = heard.askedAt();
        nextExpiryScan = Instant.MIN; // a node that waited for the topic to be read past its expiry may go now
    }

    private void checkContact() {
        try {
            Instant asked = clock.instant();
            Map<TopicPartition, Long> ends = consumer.endOffsets(assigned, CONTACT_CHECK_TIMEOUT);
            lastContact = clock.instant();
            if (!heard.pending()) {
                heard.to(ends, asked);
            }
            long behind = 0;
            for (TopicPartition tp : assigned) {
                Long end = ends.get(tp);
                if (end != null) {
                    behind += Math.max(0, end - consumer.position(tp, CONTACT_CHECK_TIMEOUT));
                }
            }
            lag = behind;
            if (table.frozen() && !catchUp.pending()) {
                // Kafka answers again: catch up to where it stands now, then thaw.
                catchUp.to(ends, asked);
                log.info("Discovery reaches Kafka again; catching up {} records before expiry resumes", behind);
            }
        } catch (TimeoutException e) {
            log.debug("Discovery: Kafka did not answer an offsets request: {}", e.toString());
        }
    }

    private void checkCaughtUp() {
        if (!catchUp.reached(consumer, assigned) || !caughtUp && startAgain()) {
            return;
        }
        if (!caughtUp) {
            caughtUp = true;
            table.replaying(false);
            heardAt = catchUp.askedAt().isAfter(heardAt) ? catchUp.askedAt() : heardAt; // read to then: none overdue
            expireDue(clock.instant());
            table.publish();
            log.info("Discovery caught up with {}: {} nodes listed, {} routable", topic, table.snapshot().nodes().size(),
                    table.snapshot().routable().size());
        }
        if (table.frozen() && clock.instant().isBefore(lastContact.plus(CONTACT_CHECK_EVERY.multipliedBy(3)))) {
            table.setFrozen(false);
            log.info("Discovery caught up after the Kafka outage: self-preservation off, nodes expire normally "
                    + "again (each has a full expiry period to be heard)");
        }
    }

    /**
     * Says whether the start-up catch-up goes on to the end offsets of now, and asks for them: when it
     * took longer than the shortest interval listed, its last records were old when read, some past
     * their node's expiry and so not applied. Each round reads what came during the one before: a
     * replica reading faster than the fleet writes gets there; one that cannot never claims to be ready.
     */
    private boolean startAgain() {
        Instant now = clock.instant();
        Duration interval = table.shortestExpiry(defaultExpiry).dividedBy(table.missedHeartbeats());
        if (Duration.between(catchUp.askedAt(), now).compareTo(interval.compareTo(ROUND) > 0 ? interval : ROUND) <= 0) {
            return false;
        }
        try {
            catchUp.to(consumer.endOffsets(assigned, CONTACT_CHECK_TIMEOUT), now);
        } catch (TimeoutException e) {
            catchUp.to(Map.of(), catchUp.askedAt()); // reached at once: asked again on the next step
        }
        return true;
    }

    /**
     * Expires the nodes whose expiry passed, once the topic is known read past it, and says when to
     * look again: at the first expiry or after {@link #SHORTEST_EXPIRY}, whichever comes first; when a
     * node is due but the topic not yet known read past it, as soon as it is ({@link #checkHeard}).
     * At scale this keeps the scans of the whole table off every poll.
     */
    private void expireDue(Instant now) {
        Instant due = table.firstExpiry();
        if (due != null && !now.isBefore(due) && heardAt.isBefore(due) && !heard.pending()
                && !now.isBefore(nextUrgentCheck)) {
            nextUrgentCheck = now.plus(URGENT_CHECK_EVERY);
            checkContact();
            checkHeard();
        }
        List<String> expired = table.expire(heardAt);
        stats.expired(expired.size());
        Instant soonest = now.plus(SHORTEST_EXPIRY);
        // Due but the topic not known read past it (checkHeard brings the scan on), or frozen: wait.
        boolean waits = due == null || due.isAfter(soonest) || table.frozen()
                || !due.isAfter(now) && heardAt.isBefore(due);
        nextExpiryScan = waits ? soonest : due.isAfter(now) ? due : now;
    }

    private void checkSelfPreservation(Instant now) {
        if (table.frozen() || lastContact.equals(Instant.MIN)
                || Duration.between(lastContact, now).compareTo(SHORTEST_EXPIRY) <= 0) {
            return; // heard from within the shortest expiry there can be: no table scan needed
        }
        Duration threshold = table.shortestExpiry(defaultExpiry);
        if (now.isAfter(lastContact.plus(threshold))) {
            table.setFrozen(true);
            log.warn("Discovery has not reached Kafka for {} ms (longer than the shortest expiry, {} ms): "
                    + "self-preservation on, expiry frozen, routing to the {} last known nodes",
                    Duration.between(lastContact, now).toMillis(), threshold.toMillis(),
                    table.snapshot().routable().size());
        }
    }
}
