package io.heartgate.scheduler.table;

import io.heartgate.protocol.Heartbeat;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Arrays;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the alive-node table: node id to latest accepted heartbeat and when the scheduler saw it.
 *
 * <p>Liveness is judged on the scheduler's side of time: a heartbeat counts as seen at its record's
 * broker timestamp capped at now, so replayed old records cannot revive a dead node, and a node
 * expires {@code missedHeartbeats} of its own intervals after it was last seen. A tombstone removes
 * a node at once. Heartbeats from an instance the node has moved on from, or with a {@code seq} not
 * above the last one of the same instance, are ignored. While {@linkplain #setFrozen frozen}
 * (self-preservation: the scheduler cannot reach Kafka) nothing expires; thawing gives every node a
 * fresh expiry period, since none of them could be heard while the channel was down.
 *
 * <p>Threading: one writer thread (the discovery loop) calls every mutating method; readers on any
 * thread take {@link #snapshot()}, an immutable view published through one volatile field: changes
 * of membership and routability at once, plain renewals (load figures) at most every
 * {@code renewalPublishEvery}, both bounded by what publishing costs ({@link #publishIfDue}).
 */
public final class NodeTable {

    private static final Logger log = LoggerFactory.getLogger(NodeTable.class);
    private static final int RETIRED_INSTANCES_PER_NODE = 8;
    private static final int DEPARTED_REMEMBERED = 10_000;
    /** A publish waits at least this many times as long as the last one took. */
    private static final int PUBLISH_COST_SHARE = 10;
    /** The longest a publish waits for the last one's cost. */
    private static final Duration PUBLISH_GAP_MAX = Duration.ofSeconds(1);

    /** What became of one heartbeat. */
    public enum Outcome {
        /** A node that was not listed joined. */
        JOINED,
        /** A listed node renewed its lease (its figures may have changed). */
        RENEWED,
        /** From an instance the node moved on from (an agent restart, or a second agent with the same id). */
        STALE_INSTANCE,
        /** Its seq was not above the last one of the same instance. */
        OLD_SEQ,
        /** Its broker timestamp is older than the expiry of a node not listed: a dead node's record. */
        EXPIRED_ON_ARRIVAL,
        /**
         * Signed, but its signed {@code sentAt} is absent or far older than its broker timestamp: a
         * captured record written to the topic again (decided by discovery, never by the table).
         */
        REPLAYED
    }

    private final Clock clock;
    private final int missedHeartbeats;
    private final Duration renewalPublishEvery;
    // Sorted, so a snapshot lists nodes in id order without sorting on every publish.
    private final TreeMap<String, Entry> entries = new TreeMap<>();
    private final Map<String, String> departedInstances = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
            return size() > DEPARTED_REMEMBERED;
        }
    };
    private final List<Consumer<TableSnapshot>> listeners = new CopyOnWriteArrayList<>();
    private final InFlightSlots inFlightSlots = new InFlightSlots();
    private final NodeEvents events = new NodeEvents();
    private volatile TableSnapshot snapshot = TableSnapshot.EMPTY;
    private volatile boolean frozen;
    private Instant thawedAt = Instant.MIN;
    private boolean structuralChange;
    private boolean renewalChange;
    /** A renewal since the last publish changed which models a node holds in memory. */
    private boolean inMemoryChange;
    private Instant lastPublish = Instant.MIN;
    /** How long the next publish waits at least after the last: {@value #PUBLISH_COST_SHARE} times what it took. */
    private Duration publishGap = Duration.ZERO;
    /** Every listed node in id order as of the last change of structure published, renewals written in. */
    private Node[] listed = new Node[0];
    /** The nodes' expiries, earliest first, one entry a node: a renewal only moves its dueMs, read when it comes up. */
    private final PriorityQueue<Due> dues = new PriorityQueue<>(Comparator.comparingLong(Due::atMs));

    /** A node's expiry as queued. */
    private record Due(long atMs, Entry entry) {
    }
    /** Publishes that changed which nodes are listed or what a balancer reads of them ({@link TableSnapshot#structure}). */
    private long structure;
    private long version;

    /** One listed node: its view and the instances it moved on from. */
    private static final class Entry {
        Node node;
        /** Its place in {@link #listed} since the last change of structure published. */
        int position;
        /** When it expires, and when it comes up in {@link #dues} (not after; MIN_VALUE: not queued). */
        long dueMs = Long.MIN_VALUE;
        long queuedMs = Long.MIN_VALUE;
        /** False once it left the table: what {@link #dues} still holds of it is stale. */
        boolean listed = true;
        final Deque<String> retiredInstances = new ArrayDeque<>();

        Entry(Node node) {
            this.node = node;
        }
    }

    /**
     * Creates an empty table.
     *
     * @param missedHeartbeats how many of its own intervals a node may stay silent
     * @param renewalPublishEvery the longest a renewal waits to be published; zero publishes every change
     */
    public NodeTable(Clock clock, int missedHeartbeats, Duration renewalPublishEvery) {
        if (missedHeartbeats < 1) {
            throw new IllegalArgumentException("missedHeartbeats must be at least 1, was " + missedHeartbeats);
        }
        this.clock = Objects.requireNonNull(clock, "clock");
        this.missedHeartbeats = missedHeartbeats;
        this.renewalPublishEvery = renewalPublishEvery;
    }

    /** Returns the latest published snapshot; never null, lock-free. */
    public TableSnapshot snapshot() {
        return snapshot;
    }

    /** Returns the missed-heartbeat count nodes are judged by. */
    public int missedHeartbeats() {
        return missedHeartbeats;
    }

    /** Registers a listener called on the writer thread after each published snapshot. */
    public void addListener(Consumer<TableSnapshot> listener) {
        listeners.add(listener);
    }

    /**
     * Applies a heartbeat seen at {@code brokerTime} (the record's timestamp); writer thread only.
     */
    public Outcome apply(Heartbeat hb, Instant brokerTime) {
        Instant now = clock.instant();
        Instant seen = brokerTime.isAfter(now) ? now : brokerTime;
        String id = hb.nodeId();
        Entry entry = entries.get(id);
        if (hb.instance() != null && hb.instance().equals(departedInstances.get(id))) {
            return Outcome.STALE_INSTANCE;
        }
        if (entry != null && hb.instance() != null) {
            if (entry.retiredInstances.contains(hb.instance())) {
                return Outcome.STALE_INSTANCE;
            }
            Heartbeat last = entry.node.heartbeat();
            if (hb.instance().equals(last.instance()) && hb.seq() != null && last.seq() != null
                    && hb.seq() <= last.seq()) {
                return Outcome.OLD_SEQ;
            }
        }
        // A listed node's newer beat renews it however late it is read (discovery behind): it goes
        // only once the topic is read past its expiry. Only a join is refused when read too late.
        if (entry == null && !now.isBefore(seen.plusMillis((long) missedHeartbeats * hb.intervalMs())) && !frozen) {
            return Outcome.EXPIRED_ON_ARRIVAL;
        }
        if (entry == null) {
            InFlight inFlight = inFlightSlots.forNode(id);
            Entry joined = new Entry(Node.of(hb, seen, inFlight, Node.othersOf(hb.load(), inFlight.takePeak())));
            entries.put(id, joined);
            queue(joined);
            structuralChange = true;
            events.joined(id, hb);
            return Outcome.JOINED;
        }
        Heartbeat last = entry.node.heartbeat();
        if (hb.instance() != null && last.instance() != null && !hb.instance().equals(last.instance())) {
            entry.retiredInstances.addLast(last.instance());
            if (entry.retiredInstances.size() > RETIRED_INSTANCES_PER_NODE) {
                entry.retiredInstances.removeFirst();
            }
            events.restarted(id, hb, last);
        }
        if (visibleChange(last, hb)) {
            structuralChange = true;
            if (last.state() != hb.state()) {
                events.state(id, hb);
            }
        } else {
            renewalChange = true;
        }
        InFlight inFlight = entry.node.inFlight();
        Node before = entry.node;
        entry.node = Node.of(hb, seen.isBefore(before.lastSeen()) ? before.lastSeen() : seen,
                inFlight, Node.othersOf(hb.load(), inFlight.takePeak()));
        inMemoryChange |= !before.loaded().equals(entry.node.loaded()) || !Objects.equals(last.backend(), hb.backend());
        if (!structuralChange) { // else positions are about to change: the next publish lists every node afresh
            listed[entry.position] = entry.node;
        }
        queue(entry);
        return Outcome.RENEWED;
    }

    /** Removes a node at once because its agent left (tombstone); returns whether it was listed. */
    public boolean remove(String nodeId) {
        Entry entry = entries.remove(nodeId);
        if (entry == null) {
            return false;
        }
        entry.listed = false;
        if (entry.node.heartbeat().instance() != null) {
            departedInstances.put(nodeId, entry.node.heartbeat().instance());
        }
        structuralChange = true;
        events.left(nodeId);
        return true;
    }

    /**
     * Returns when the first node expires without another heartbeat, or {@code null} when none is listed.
     */
    public Instant firstExpiry() {
        Due first = head();
        return first == null ? null : Instant.ofEpochMilli(first.atMs());
    }

    /** Returns the earliest expiry queued that still stands, dropping stale ones; {@code null} when none. */
    private Due head() {
        Due d;
        while ((d = dues.peek()) != null && (!d.entry().listed || d.entry().queuedMs != d.atMs()
                || d.entry().dueMs > d.atMs())) {
            dues.poll();
            Entry e = d.entry();
            if (e.listed && e.queuedMs == d.atMs()) { // renewed since it was queued: back in at its expiry
                e.queuedMs = e.dueMs;
                dues.add(new Due(e.dueMs, e));
            }
        }
        return d;
    }

    /** Notes when {@code e}'s node expires; queues it when it is not queued, or queued for later. */
    private void queue(Entry e) {
        long base = Math.max(e.node.lastSeen().toEpochMilli(), thawedAt.equals(Instant.MIN) ? Long.MIN_VALUE
                : thawedAt.plusNanos(999_999).toEpochMilli());
        e.dueMs = base + (long) missedHeartbeats * e.node.heartbeat().intervalMs();
        if (e.queuedMs == Long.MIN_VALUE || e.dueMs < e.queuedMs) { // a shorter interval: the queued one is stale
            e.queuedMs = e.dueMs;
            dues.add(new Due(e.dueMs, e));
        }
    }

    /** Removes every node whose expiry has passed, unless frozen; returns the ids removed. */
    public List<String> expire() {
        return expire(Instant.MAX);
    }

    /**
     * Removes every node whose expiry had passed by {@code heardAt}, the last time the topic was
     * known to be read (records came, or the broker answered), unless frozen; returns the ids removed.
     * A node whose expiry passed only after that waits: its heartbeats may be held up with Kafka's,
     * and it must not go in the moment before an outage is noticed.
     */
    public List<String> expire(Instant heardAt) {
        if (frozen || entries.isEmpty()) {
            return List.of();
        }
        Instant now = clock.instant();
        Instant by = heardAt.isBefore(now) ? heardAt : now;
        if (by.isBefore(Instant.EPOCH)) {
            return List.of(); // the topic not yet known read at all (Instant.MIN): nothing is known overdue
        }
        long byMs = by.toEpochMilli();
        List<String> expired = new ArrayList<>();
        for (Due d = head(); d != null && d.atMs() <= byMs; d = head()) {
            dues.poll();
            Node n = d.entry().node;
            entries.remove(n.id());
            d.entry().listed = false;
            expired.add(n.id());
            events.expired(n, Duration.between(n.lastSeen(), now).toMillis(), missedHeartbeats);
        }
        if (!expired.isEmpty()) {
            structuralChange = true;
        }
        return expired;
    }

    /**
     * Freezes or thaws expiry (self-preservation). Thawing counts as a renewal of every node: each gets
     * a full expiry period from now to be heard again.
     */
    public void setFrozen(boolean value) {
        if (frozen == value) {
            return;
        }
        frozen = value;
        if (!value) {
            thawedAt = clock.instant();
            dues.clear(); // every expiry moved: queue them again
            for (Entry e : entries.values()) {
                e.queuedMs = Long.MIN_VALUE;
                queue(e);
            }
        }
    }

    /** Sets whether the table is being replayed from the topic at a scheduler's start: joins are not news then. */
    public void replaying(boolean value) {
        events.replaying(value);
    }

    /** Returns whether expiry is frozen. */
    public boolean frozen() {
        return frozen;
    }

    /** Returns the shortest expiry among the last snapshot's nodes, or {@code fallback} when it lists none. */
    public Duration shortestExpiry(Duration fallback) {
        long interval = snapshot.shortestIntervalMs();
        return interval == 0 ? fallback : Duration.ofMillis(missedHeartbeats * interval);
    }

    /**
     * Publishes pending changes if any are due; returns whether it published. Writer thread only.
     * Changes of structure are due at once and renewals after the period given, but neither sooner
     * after the last publish than {@value #PUBLISH_COST_SHARE} times what that publish took: so
     * publishing keeps to about a {@value #PUBLISH_COST_SHARE}th of the writer's time however many
     * nodes are listed; the wait is at most {@link #PUBLISH_GAP_MAX}, so a pause (a long GC) never
     * holds back a state change for longer.
     */
    public boolean publishIfDue() {
        if (!structuralChange && !renewalChange) {
            return false;
        }
        Instant now = clock.instant();
        if (now.isBefore(lastPublish.plus(publishGap))
                || !structuralChange && now.isBefore(lastPublish.plus(renewalPublishEvery))) {
            return false;
        }
        publish();
        return true;
    }

    /**
     * Publishes a snapshot of the table as it is now; writer thread only. One of renewals alone reuses
     * the last one's positions ({@link TableSnapshot#renewed}) instead of working out who serves what.
     */
    public void publish() {
        Instant began = clock.instant();
        TableSnapshot s;
        if (structuralChange || !renewalChange) { // a publish asked for without a renewal: structure, to be safe
            Node[] nodes = new Node[entries.size()];
            int i = 0;
            for (Entry e : entries.values()) {
                e.position = i;
                nodes[i++] = e.node;
            }
            listed = nodes;
            s = new TableSnapshot(++version, ++structure, this, Arrays.asList(nodes));
        } else {
            s = snapshot.renewed(++version, listed, inMemoryChange);
        }
        snapshot = s;
        structuralChange = false;
        renewalChange = false;
        inMemoryChange = false;
        for (Consumer<TableSnapshot> l : listeners) {
            try {
                l.accept(s);
            } catch (RuntimeException e) {
                log.warn("A table listener failed; the table carries on", e);
            }
        }
        // The cost of a publish is what it sets off too: the listeners walk the snapshot as well.
        lastPublish = clock.instant();
        Duration gap = Duration.between(began, lastPublish).multipliedBy(PUBLISH_COST_SHARE);
        publishGap = gap.compareTo(PUBLISH_GAP_MAX) > 0 ? PUBLISH_GAP_MAX : gap;
    }

    private static boolean visibleChange(Heartbeat a, Heartbeat b) {
        return a.state() != b.state()
                || a.weight() != b.weight()
                || !a.url().equals(b.url())
                || !a.models().equals(b.models())
                || a.intervalMs() != b.intervalMs();
    }
}
