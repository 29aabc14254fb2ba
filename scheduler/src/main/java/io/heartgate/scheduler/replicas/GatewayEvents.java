package io.heartgate.scheduler.replicas;

import io.heartgate.protocol.cli.KafkaSettings;
import io.heartgate.protocol.signing.HeartbeatKeys;
import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.HeartbeatVerifier;
import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.admission.SharedUsage;
import io.heartgate.scheduler.balancer.KeyHomes;
import io.heartgate.scheduler.discovery.DiscoveryConsumerConfig;
import io.heartgate.scheduler.discovery.RestartPoint;
import io.heartgate.scheduler.discovery.TopicSetup;
import io.heartgate.scheduler.health.FlapDamping;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.routing.ResponseHomes;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.trust.ApiKeys;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.config.TopicConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the replicas of one gateway share through Kafka, wired once per replica: the
 * {@link Outbox} the request path, passive health and the homes write to, the publisher and the
 * reader threads, and the {@link ReplicaView}. Build it, hand {@link #usage()} and {@link #shares()}
 * to the rate limits, then {@link #start} it with what the others' records are applied to.
 */
public final class GatewayEvents implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(GatewayEvents.class);
    /** How often a replica's heartbeat is written; it leaves the others' lists after three missed. */
    public static final Duration REPLICA_INTERVAL = Duration.ofSeconds(1);
    /** How far back a starting replica reads: as long as a response id is remembered. */
    static final Duration LOOK_BACK = ResponseHomes.DEFAULT_TTL;

    private final String topic;
    private final String bootstrap;
    private final KafkaSettings kafkaClient;
    private final HeartbeatKeys keys;
    private final Clock clock;
    private final ReplicaView view;
    private final Outbox outbox;
    private final EventCodec codec = new EventCodec();
    private EventPublisher publisher;
    private Thread publisherThread;
    private EventReader reader;
    private Thread readerThread;
    private volatile Supplier<RestartPoint> restartPoints = () -> null;
    private FlapDamping flaps;

    /**
     * @param replica this replica's id
     * @param keys the heartbeat keys: records are signed with the first and checked against all; {@code null} for unsigned
     */
    public GatewayEvents(String replica, String topic, String bootstrap, KafkaSettings kafkaClient, HeartbeatKeys keys,
                         Clock clock) {
        this.topic = topic;
        this.bootstrap = bootstrap;
        this.kafkaClient = kafkaClient;
        this.keys = keys;
        this.clock = clock;
        this.view = new ReplicaView(replica, clock, 3 * REPLICA_INTERVAL.toMillis());
        this.outbox = new Outbox(replica, clock);
    }

    /** Returns the configuration a new events topic gets: compacted by what each record describes, kept 6 hours. */
    public static Map<String, String> topicConfig() {
        return Map.of(
                // Each record key (a node, a response, a session, a replica's usage) keeps its latest.
                TopicConfig.CLEANUP_POLICY_CONFIG, "compact,delete",
                // Ages are judged by the broker's clock, as for heartbeats.
                TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime",
                // As long as a response id is remembered; nothing older changes anything.
                TopicConfig.RETENTION_MS_CONFIG, String.valueOf(LOOK_BACK.toMillis()),
                TopicConfig.SEGMENT_MS_CONFIG, String.valueOf(TimeUnit.MINUTES.toMillis(10)),
                TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG, String.valueOf(TimeUnit.MINUTES.toMillis(10)),
                TopicConfig.MAX_MESSAGE_BYTES_CONFIG, String.valueOf(EventCodec.MAX_RECORD_BYTES));
    }

    /**
     * Has this replica's heartbeats carry what its node table tells a replica starting
     * ({@code points}: {@code null} while the table is not complete): starting replicas read less of
     * the heartbeat topic by it ({@link #restartPoint}). Call before {@link #start}.
     */
    public void shareDiscovery(Supplier<RestartPoint> points) {
        this.restartPoints = points;
    }

    /**
     * Has this replica tell the others of the nodes {@code damping} holds for flapping, and hold
     * those they hold. Call before {@link #start}.
     */
    public void shareFlapHolds(FlapDamping damping) {
        this.flaps = damping;
    }

    /**
     * Returns the newest restart point the replicas wrote in the last seconds, read now with a
     * consumer of its own (a few seconds at most); empty when there is none, or the topic cannot be read.
     */
    public Optional<RestartPoint> restartPoint() {
        Map<String, Object> config = DiscoveryConsumerConfig.consumerConfig(bootstrap,
                "heartgate-restart-" + view.self(), kafkaClient);
        config.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
        return RestartPoints.newest(new KafkaConsumer<>(config), topic, codec,
                keys == null ? null : new HeartbeatVerifier(keys), clock);
    }

    /** Returns where the rate limits report what this replica grants and charges. */
    public SharedUsage usage() {
        return outbox;
    }

    /** Returns among how many replicas each limit is split now (1 while Kafka carries the usage). */
    public IntSupplier shares() {
        return view::shares;
    }

    /** Returns the live replicas and whether the topic is reachable. */
    public ReplicaView view() {
        return view;
    }

    /**
     * Creates the topic if missing, starts writing this replica's records and reading everyone's.
     *
     * @param address where this replica's proxy listens, as its heartbeat says
     * @param queueDepth the gateway queue's depth now
     * @param sessions the affinity homes, or {@code null} when the strategy keeps none
     * @param apiKeys the API keys whose limits are shared, or {@code null} without keys
     */
    public void start(String address, IntSupplier queueDepth, RateLimits limits, Supplier<ApiKeys> apiKeys,
                      PassiveHealth health, KeyHomes sessions, ResponseHomes responses, Ticker ticker) {
        try {
            TopicSetup.ensure(bootstrap, kafkaClient, topic, 1, topicConfig());
        } catch (IllegalStateException e) {
            // Not fatal: the replica serves on its own, limits at its share, until the topic can be used.
            log.warn("Gateway events topic {} not set up ({}); this replica shares nothing with the others until "
                    + "it can write and read it", topic, e.getMessage());
        }
        HeartbeatSigner signer = null;
        HeartbeatVerifier verifier = null;
        if (keys != null) {
            signer = new HeartbeatSigner(keys);
            verifier = new HeartbeatVerifier(keys);
            if (!keys.first().allows("replica/" + view.self())) {
                log.warn("The first key of --heartbeat-keys ({}) may speak only for some node ids: the other replicas "
                        + "refuse the gateway events it signs; put a key without a node-id glob first",
                        keys.first().id());
            }
        }
        health.share(outbox);
        if (flaps != null) {
            flaps.share(outbox);
        }
        responses.share(outbox);
        if (sessions != null) {
            sessions.share(outbox);
        }
        String clientId = "heartgate-events-" + view.self();
        publisher = new EventPublisher(EventPublisher.producer(bootstrap, clientId, kafkaClient), topic, outbox, codec,
                signer, view, clock, new EventPublisher.Beat(version(), address, queueDepth,
                REPLICA_INTERVAL.toMillis(), restartPoints));
        Map<String, Object> consumerConfig = DiscoveryConsumerConfig.consumerConfig(bootstrap, clientId, kafkaClient);
        // Never made by a read with the broker's defaults (CreateTime, no compaction): the replay window needs ours.
        consumerConfig.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
        reader = new EventReader(new KafkaConsumer<>(consumerConfig), topic, codec, verifier,
                new EventSink(limits, apiKeys, health, flaps, sessions, responses, ticker), view, clock, LOOK_BACK);
        publisherThread = thread(publisher, "heartgate-events-out");
        readerThread = thread(reader, "heartgate-events-in");
        log.info("Replica {} shares limits, node health and sessions through {}", view.self(), topic);
    }

    /** Returns this replica's id: the host's name and 8 random hex digits, so a restart is a new replica. */
    public static String replicaId() {
        String host = System.getenv().getOrDefault("HOSTNAME", "scheduler").replaceAll("[^A-Za-z0-9._-]", "-");
        return (host.length() > 100 ? host.substring(0, 100) : host) + "-"
                + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Returns the host other replicas and operators reach this one at: the bind address, or the host's name for any. */
    public static String advertised(String bind) {
        if (!"0.0.0.0".equals(bind) && !"::".equals(bind)) {
            return bind;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return bind;
        }
    }

    private static Thread thread(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static String version() {
        String v = GatewayEvents.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    /** Registers the events' meters: records written, read and refused, replicas live, limits split. */
    public void bindTo(MeterRegistry registry) {
        Gauge.builder("heartgate_replicas_live", view, v -> v.replicas().size())
                .description("Scheduler replicas whose heartbeat on the events topic is current, this one included")
                .register(registry);
        Gauge.builder("heartgate_limits_local_share", view, v -> v.degraded() ? 1 : 0)
                .description("1 while the events topic cannot be reached and limits are this replica's share")
                .register(registry);
        FunctionCounter.builder("heartgate_events_published", this, e -> e.publisher == null ? 0 : e.publisher.sent())
                .description("Gateway events records this replica wrote").register(registry);
        FunctionCounter.builder("heartgate_events_publish_failed", this,
                        e -> e.publisher == null ? 0 : e.publisher.failed())
                .description("Gateway events records Kafka did not store").register(registry);
        FunctionCounter.builder("heartgate_events_dropped", outbox, Outbox::dropped)
                .description("Gateway events dropped on a full outbox, never sent").register(registry);
        for (String type : new String[] {"usage", "ejected", "held", "readmitted", "placed", "replica", "left"}) {
            FunctionCounter.builder("heartgate_events_received", this,
                            e -> e.reader == null ? 0 : e.reader.received().get(type).sum())
                    .tag("type", type).description("Gateway events records read, by type").register(registry);
        }
        for (EventCodec.Refusal why : EventCodec.Refusal.values()) {
            FunctionCounter.builder("heartgate_events_rejected", this,
                            e -> e.reader == null ? 0 : e.reader.refused().get(why).sum())
                    .tag("reason", why.name().toLowerCase(Locale.ROOT))
                    .description("Gateway events records refused, by reason").register(registry);
        }
    }

    /** Writes this replica's last usage and its leaving, then stops both threads. */
    @Override
    public void close() {
        if (reader != null) {
            reader.close();
        }
        if (publisher != null) {
            publisher.close(publisherThread);
        }
        if (readerThread != null) {
            try {
                readerThread.join(3_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
