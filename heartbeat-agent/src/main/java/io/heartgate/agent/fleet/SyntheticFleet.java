package io.heartgate.agent.fleet;

import io.heartgate.agent.publish.HeartbeatPublisher;
import io.heartgate.protocol.HeartbeatRules;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.NodeState;
import io.heartgate.protocol.cli.Cli;
import io.heartgate.protocol.cli.KafkaSettings;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * A heartbeat load generator: N synthetic nodes ({@link FleetPlan}) publishing through the agent's
 * own publisher ({@link HeartbeatPublisher}: one in flight per node, a beat due while the last is
 * unacknowledged dropped) and its producer settings, over one producer for the whole fleet, each
 * node at its own moment within the interval. A share of the fleet dies (goes silent, as a crashed
 * host does), joins (a node dead for 30 s comes back as a new instance) and flaps (one beat DOWN, then UP)
 * per minute. Reports what it sent every few seconds and at the end; with {@code --events}, writes
 * each join, death and flap with its time, for measuring how soon a scheduler lists and expires
 * nodes and how closely replicas agree.
 */
@Command(name = "synthetic-fleet", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Publishes the heartbeats of N synthetic nodes, for scale runs (bench/heartbeats.sh).")
public final class SyntheticFleet implements Callable<Integer> {

    /** The publishing tick: each node is due in one tick of each interval. */
    static final long TICK_MS = 10;
    /** How long a node stays dead before it may join again: long enough for any scheduler to expire it. */
    static final long DEAD_FOR_MS = 30_000;

    @Option(names = "--kafka", required = true, paramLabel = "HOST:PORT[,...]", description = "Kafka to publish to")
    String kafka;

    @Option(names = "--kafka-config", paramLabel = "FILE", description = "Kafka client properties, as the agent's")
    Path kafkaConfig;

    @Option(names = "--topic", defaultValue = "gpu-heartbeats", description = "heartbeat topic (default: ${DEFAULT-VALUE})")
    String topic;

    @Option(names = "--nodes", defaultValue = "1000", description = "nodes (default: ${DEFAULT-VALUE})")
    int nodes;

    @Option(names = "--interval", defaultValue = "1s", description = "each node's heartbeat interval (default: ${DEFAULT-VALUE})")
    Duration interval;

    @Option(names = "--die-per-minute", defaultValue = "0", description = "share of the fleet going silent per minute")
    double diePerMinute;

    @Option(names = "--join-per-minute", defaultValue = "0", description = "share of the fleet coming back per minute")
    double joinPerMinute;

    @Option(names = "--flap-per-minute", defaultValue = "0", description = "share of the fleet sending one DOWN beat per minute")
    double flapPerMinute;

    @Option(names = "--duration", defaultValue = "0s", description = "how long to run; 0s: until stopped (default: ${DEFAULT-VALUE})")
    Duration duration;

    @Option(names = "--report-every", defaultValue = "10s", description = "report period (default: ${DEFAULT-VALUE})")
    Duration reportEvery;

    @Option(names = "--events", paramLabel = "FILE",
            description = "write `epochMs join|die|flap nodeId` lines here: a join at its first beat, a death at its last, a flap at its DOWN beat")
    Path events;

    /** Runs until {@code --duration} passes or SIGTERM. */
    public static void main(String[] args) {
        System.exit(Cli.commandLine("synthetic-fleet", new SyntheticFleet()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Duration every = interval;
        if (every.toMillis() < HeartbeatRules.MIN_INTERVAL_MS || every.toMillis() > HeartbeatRules.MAX_INTERVAL_MS
                || nodes < 1 || nodes > 1_000_000 || diePerMinute < 0 || joinPerMinute < 0
                || flapPerMinute < 0) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--interval 100ms to 60s, --nodes 1 to "
                    + "1000000, the per-minute shares not negative");
        }
        FleetPlan plan = new FleetPlan(nodes, (int) every.toMillis());
        KafkaSettings operator;
        try {
            operator = KafkaSettings.load(kafkaConfig, System.getenv(), ProducerConfig.configNames());
        } catch (InvalidSettingException e) { // a bad --kafka-config: one line naming it, as the agent says it
            throw new CommandLine.ParameterException(new CommandLine(this), Cli.flagError(e, Map.of()));
        }
        Map<String, Object> config = HeartbeatPublisher.producerConfig(kafka, "synthetic-fleet", every, operator);
        // The agent's settings, with room for a whole fleet in one producer instead of one node's beat.
        config.put(ProducerConfig.BUFFER_MEMORY_CONFIG, Math.max(32L << 20, nodes * 4096L));
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 1_000);
        try (Producer<byte[], byte[]> producer = new KafkaProducer<>(config);
             PrintWriter log = events == null ? null : new PrintWriter(Files.newBufferedWriter(events, StandardCharsets.UTF_8))) {
            Run run = new Run(plan, producer, topic, log, new double[] {diePerMinute, joinPerMinute, flapPerMinute});
            ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor();
            CountDownLatch done = new CountDownLatch(1);
            Cli.onTerminate(done::countDown);
            long reportMs = reportEvery.toMillis();
            long start = System.currentTimeMillis();
            ticker.scheduleAtFixedRate(() -> {
                try {
                    run.tick(every.toMillis());
                    long now = System.currentTimeMillis();
                    if (now - run.lastReport >= reportMs) {
                        run.lastReport = now;
                        System.out.println(run.report((now - start) / 1000.0));
                    }
                } catch (RuntimeException e) {
                    e.printStackTrace();
                    done.countDown();
                }
            }, 0, TICK_MS, TimeUnit.MILLISECONDS);
            Duration runFor = duration;
            if (runFor.isZero()) {
                done.await();
            } else {
                done.await(runFor.toMillis(), TimeUnit.MILLISECONDS);
            }
            ticker.shutdownNow();
            ticker.awaitTermination(5, TimeUnit.SECONDS);
            producer.flush();
            System.out.println(run.report((System.currentTimeMillis() - start) / 1000.0) + " (end)");
        } catch (IOException e) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--events: " + e.getMessage());
        }
        return 0;
    }

    /** The fleet's state, on the ticking thread. */
    static final class Run {
        private final FleetPlan plan;
        private final PrintWriter events;
        private final HeartbeatPublisher[] publishers;
        private final boolean[] dead;
        private final boolean[] flapping;
        private final long[] seq;
        /** When each node's last beat was handed to the producer, epoch ms. */
        private final long[] lastBeat;
        private final String[] instance;
        private final Random random;
        private final double[] dieCarry = new double[1];
        private final double[] joinCarry = new double[1];
        private final double[] flapCarry = new double[1];
        /** Dead nodes, oldest death first: node index and when it died (epoch ms). */
        private final ArrayDeque<long[]> graveyard = new ArrayDeque<>();
        private long tick;
        private long published;
        private long died;
        private long joined;
        private long flapped;
        private int deadCount;
        long lastReport = System.currentTimeMillis();

        Run(FleetPlan plan, Producer<byte[], byte[]> producer, String topic, PrintWriter events, double[] rates) {
            this.plan = plan;
            this.rates = rates.clone();
            this.events = events;
            int n = plan.nodes();
            this.publishers = new HeartbeatPublisher[n];
            this.dead = new boolean[n];
            this.flapping = new boolean[n];
            this.seq = new long[n];
            this.lastBeat = new long[n];
            this.instance = new String[n];
            this.random = new Random(1);
            for (int i = 0; i < n; i++) {
                publishers[i] = new HeartbeatPublisher(producer, topic, FleetPlan.id(i), Clock.systemUTC());
                instance[i] = UUID.randomUUID().toString();
            }
        }

        /** Publishes the nodes due in this tick, after the churn that falls due in it. */
        void tick(long intervalMs) {
            int n = plan.nodes();
            churn();
            long slots = Math.max(1, intervalMs / TICK_MS);
            int slot = (int) (tick++ % slots);
            Instant now = Instant.now();
            long nowMs = now.toEpochMilli();
            for (int i = slot; i < n; i += (int) slots) {
                if (dead[i]) {
                    continue;
                }
                NodeState state = flapping[i] ? NodeState.DOWN : NodeState.UP;
                boolean first = seq[i] == 0;
                if (!publishers[i].publish(plan.heartbeat(i, instance[i], seq[i] + 1, state, random, now))) {
                    continue; // the last beat still unacknowledged: this one dropped, as the agent drops it
                }
                seq[i]++;
                if (first) {
                    event("join", i, nowMs);
                } else if (flapping[i]) {
                    event("flap", i, nowMs);
                }
                flapping[i] = false;
                lastBeat[i] = nowMs;
                published++;
            }
        }

        private void churn() {
            int n = plan.nodes();
            for (int k = plan.due(diePerMinute(), TICK_MS, dieCarry); k > 0 && deadCount < n; k--) {
                int i = random.nextInt(n);
                if (!dead[i]) {
                    dead[i] = true;
                    flapping[i] = false;
                    graveyard.addLast(new long[] {i, System.currentTimeMillis()});
                    deadCount++;
                    died++;
                    event("die", i, lastBeat[i]); // silent from its last beat on
                }
            }
            long now = System.currentTimeMillis();
            for (int k = plan.due(joinPerMinute(), TICK_MS, joinCarry); k > 0; k--) {
                long[] grave = graveyard.peekFirst();
                if (grave == null || grave[1] > now - DEAD_FOR_MS) {
                    break; // none dead long enough: a join comes back once its node has surely expired
                }
                graveyard.pollFirst();
                int i = (int) grave[0];
                dead[i] = false;
                deadCount--;
                joined++;
                instance[i] = UUID.randomUUID().toString();
                seq[i] = 0; // its next beat is a new life's first: logged as a join
                lastBeat[i] = 0; // a death before that beat has no last beat of this life to log
            }
            for (int k = plan.due(flapPerMinute(), TICK_MS, flapCarry); k > 0; k--) {
                int i = random.nextInt(n);
                if (!dead[i] && !flapping[i]) { // a dead node sends no DOWN beat: not a flap
                    flapping[i] = true;
                    flapped++;
                }
            }
        }

        private double diePerMinute() {
            return rates[0];
        }

        private double joinPerMinute() {
            return rates[1];
        }

        private double flapPerMinute() {
            return rates[2];
        }

        /** Shares of the fleet per minute: dying, joining, flapping. */
        private final double[] rates;

        /** Writes {@code at what nodeId}: a join at its new life's first beat, a death at its last beat. */
        private void event(String what, int i, long at) {
            if (events != null && at > 0) {
                events.println(at + " " + what + " " + FleetPlan.id(i));
            }
        }

        String report(double seconds) {
            long acked = 0;
            long failed = 0;
            long skipped = 0;
            for (HeartbeatPublisher p : publishers) {
                acked += p.sentCount();
                failed += p.failedCount();
                skipped += p.skippedCount();
            }
            if (events != null) {
                events.flush();
            }
            return String.format("t=%.0fs live=%d published=%d (%.0f/s) acked=%d failed=%d skipped=%d died=%d "
                    + "joined=%d flapped=%d", seconds, plan.nodes() - deadCount, published, published / Math.max(seconds, 1e-3),
                    acked, failed, skipped, died, joined, flapped);
        }
    }
}
