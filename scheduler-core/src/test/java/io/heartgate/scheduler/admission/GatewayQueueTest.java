package io.heartgate.scheduler.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.FreeSlots;
import io.heartgate.scheduler.routing.Lease;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.time.Ticker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.Test;

class GatewayQueueTest {

    private static final Node NODE = Node.of(Heartbeat.builder("n1", "http://127.0.0.1:1").build(), Instant.EPOCH,
            new InFlight());

    private long now;
    /** Free slots per model; the router claims one per route. */
    private final Map<String, Integer> free = new HashMap<>();
    private final List<String> outcomes = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final GatewayQueue queue = new GatewayQueue(3, Duration.ofSeconds(10), Ticker.ofNanos(() -> now), this::route, registry);

    private Route route(GatewayQueue.Waiter w) {
        String model = w.facts().model();
        if (w.tried().contains("only-free-node")) {
            return Route.Refused.FULL; // a retry that already tried the one node with room
        }
        if (!free.containsKey(model)) {
            return new Route.Refused(ErrorType.MODEL_NOT_FOUND);
        }
        int slots = free.get(model);
        if (slots == 0) {
            return Route.Refused.FULL;
        }
        free.put(model, slots - 1);
        return new Route.To(Lease.take(NODE), false, false, null);
    }

    private class Waiting implements GatewayQueue.Waiter {
        final String name;
        final RequestFacts facts;
        final List<String> tried;

        Waiting(String name, String model) {
            this(name, model, List.of());
        }

        Waiting(String name, String model, List<String> tried) {
            this.name = name;
            this.facts = RequestFacts.ofModel(model);
            this.tried = tried;
        }

        @Override
        public RequestFacts facts() {
            return facts;
        }

        @Override
        public List<String> tried() {
            return tried;
        }

        @Override
        public void routed(Route.To route) {
            outcomes.add(name + " routed");
        }

        @Override
        public void refused(Route.Refused refusal) {
            outcomes.add(name + " " + refusal.error().wireName());
        }

        @Override
        public void overloaded(String message, int retryAfterSeconds) {
            outcomes.add(name + " overloaded retry-after " + retryAfterSeconds);
        }
    }

    private double exits(String outcome) {
        return registry.get("heartgate_queue_exits").tag("outcome", outcome).counter().count();
    }

    private FairQueue.Ticket<GatewayQueue.Waiter> enqueue(String name, String model, String caller, int priority) {
        return queue.enqueue(new Waiting(name, model), caller, priority);
    }

    /** Queues a retry that already tried the one node with room, so it waits in the retries' part. */
    private FairQueue.Ticket<GatewayQueue.Waiter> enqueueRetry(String name, String model, String caller, int priority) {
        return queue.enqueue(new Waiting(name, model, List.of("only-free-node")), caller, priority);
    }

    /** Queues a retry that tried a node now full, so it fits wherever the model has a free slot. */
    private FairQueue.Ticket<GatewayQueue.Waiter> enqueueRoomyRetry(String name, String model, String caller, int priority) {
        return queue.enqueue(new Waiting(name, model, List.of("another-node")), caller, priority);
    }

    /** As {@link #enqueue}, arriving at {@code at} on the queue's clock (which stays there). */
    private FairQueue.Ticket<GatewayQueue.Waiter> enqueueAt(long at, String name, String model, String caller, int priority) {
        now = at;
        return enqueue(name, model, caller, priority);
    }

    private FairQueue.Ticket<GatewayQueue.Waiter> enqueueRetryAt(long at, String name, String model, String caller,
                                                                 int priority) {
        now = at;
        return enqueueRetry(name, model, caller, priority);
    }

    private FairQueue.Ticket<GatewayQueue.Waiter> enqueueRoomyRetryAt(long at, String name, String model, String caller,
                                                                      int priority) {
        now = at;
        return enqueueRoomyRetry(name, model, caller, priority);
    }

    /** Frees {@code slots} slots for model m and tells the queue. */
    private void slotsFree(int slots) {
        free.put("m", slots);
        queue.slotFreed(NODE);
    }

    private double rejected() {
        return registry.get("heartgate_queue_rejected").counter().count();
    }

    @Test
    void anEmptyQueueTakesNoLockAndQueuesNothing() {
        assertThat(queue.queued("m")).isFalse();
        queue.slotFreed(NODE);
        queue.sweep();
        assertThat(queue.depth()).isZero();
    }

    @Test
    void eachModelsDepthAndLongestWaitAreReadForTheAutoscalingSignals() {
        assertThat(queue.byModel()).isEmpty();
        free.put("m", 0);
        free.put("n", 0);
        enqueue("a", "m", "alice", 0);
        now += 2_000_000_000L;
        enqueue("b", "m", "bob", 0);
        enqueueRetry("c", "m", "carol", 0);
        enqueue("d", "n", "dave", 0);
        now += 500_000_000L;
        assertThat(queue.byModel()).containsOnly(
                Map.entry("m", new ModelWait(3, 2_500_000_000L)),
                Map.entry("n", new ModelWait(1, 500_000_000L)));
    }

    @Test
    void aRequestLeavesTheMomentASlotFreesCallersInTurn() {
        free.put("m", 0);
        enqueue("h1", "m", "heavy", 0);
        enqueue("h2", "m", "heavy", 0);
        enqueue("l1", "m", "light", 0);
        assertThat(queue.depth()).isEqualTo(3);
        assertThat(queue.queued("m")).isTrue();
        assertThat(queue.queued("other")).isFalse();
        slotsFree(1);
        assertThat(outcomes).containsExactly("h1 routed");
        slotsFree(2);
        assertThat(outcomes).containsExactly("h1 routed", "l1 routed", "h2 routed");
        assertThat(queue.depth()).isZero();
        assertThat(exits("served")).isEqualTo(3);
    }

    @Test
    void aSlotFreedOnANodeThatServesNoWaitingModelRoutesNothing() {
        Node other = Node.of(Heartbeat.builder("n2", "http://127.0.0.1:2").models(List.of("x:7b")).build(),
                Instant.EPOCH, new InFlight());
        Node sharing = Node.of(Heartbeat.builder("n3", "http://127.0.0.1:3").models(List.of("x:7b", "q:7b")).build(),
                Instant.EPOCH, new InFlight());
        free.put("q:7b", 0);
        enqueue("waits", "q:7b", "a", 0);
        free.put("q:7b", 1); // were the queue served, it would go
        queue.slotFreed(other);
        assertThat(outcomes).as("x's nodes are not q's: no pass, no lock").isEmpty();
        queue.slotFreed(sharing);
        assertThat(outcomes).containsExactly("waits routed");
    }

    @Test
    void aHigherClassMeetingAFullQueueAndAFreeSlotTakesTheSlotAndPushesNoOneOut() {
        GatewayQueue one = new GatewayQueue(1, Duration.ofSeconds(10), Ticker.ofNanos(() -> now), this::route, registry);
        free.put("m", 0);
        now = 1;
        one.enqueue(new Waiting("low", "m"), "a", 0);
        free.put("m", 1); // free, and not yet handed out (a heartbeat's, before the sweep)
        now = 2;
        FairQueue.Ticket<GatewayQueue.Waiter> high = one.enqueue(new Waiting("high", "m"), "b", 5);
        assertThat(outcomes).as("a higher class is always served first").containsExactly("high routed");
        assertThat(high.queued()).isFalse();
        assertThat(one.depth()).as("the lower class still waits").isEqualTo(1);
        assertThat(exits("pushed_out")).isZero();

        free.put("m", 1);
        now = 3;
        one.enqueue(new Waiting("same", "m"), "c", 0);
        assertThat(outcomes).as("of one class, the one that waited goes first").containsExactly("high routed",
                "low routed");
        assertThat(one.depth()).isEqualTo(1);
    }

    @Test
    void aCallersParallelCallsGoTogetherAheadOfAFloodThatHadItsBurst() {
        GatewayQueue roomy = new GatewayQueue(100, Duration.ofSeconds(10), Ticker.ofNanos(() -> now), this::route, registry);
        free.put("m", 0);
        for (int i = 1; i <= 10; i++) {
            now = i;
            roomy.enqueue(new Waiting("h" + i, "m"), "heavy", 0);
        }
        free.put("m", 4);
        roomy.slotFreed(NODE);
        assertThat(outcomes).containsExactly("h1 routed", "h2 routed", "h3 routed", "h4 routed");
        for (int i = 1; i <= 3; i++) {
            now = 20 + i;
            roomy.enqueue(new Waiting("l" + i, "m"), "light", 0);
        }
        outcomes.clear();
        free.put("m", 4);
        roomy.slotFreed(NODE);
        assertThat(outcomes).containsExactly("l1 routed", "l2 routed", "l3 routed", "h5 routed");
    }

    @Test
    void aRetryThatOnlyFitsATriedNodeDoesNotHoldUpFirstAttemptsBehindIt() {
        free.put("m", 0);
        enqueueRetry("retry", "m", "a", 0);
        enqueueAt(5, "first", "m", "b", 0);
        assertThat(queue.depth()).isEqualTo(2);
        slotsFree(1);
        assertThat(outcomes).containsExactly("first routed");
        assertThat(queue.depth()).isEqualTo(1);
        assertThat(queue.queued("m")).isTrue();
    }

    @Test
    void aRetryWhoseUntriedNodesAreFullDoesNotHoldUpARetryThatFits() {
        free.put("m", 0);
        enqueueRetry("stuck", "m", "a", 0);
        enqueueRoomyRetryAt(5, "fits", "m", "b", 0);
        enqueueAt(6, "first", "m", "c", 0);
        slotsFree(1);
        assertThat(outcomes).as("the freed slot goes to the retry that can use it, before first attempts")
                .containsExactly("fits routed");
        slotsFree(1);
        assertThat(outcomes).containsExactly("fits routed", "first routed");
        assertThat(queue.depth()).isEqualTo(1);
    }

    @Test
    void retriesThatTriedTheSameNodesAsOneThatFoundNoRoomAreNotRoutedAgainInThePass() {
        free.put("m", 0);
        int[] routed = {0};
        GatewayQueue counting = new GatewayQueue(10, Duration.ofSeconds(10), Ticker.ofNanos(() -> now), w -> {
            routed[0]++;
            return route(w);
        }, registry);
        for (int i = 0; i < 5; i++) {
            now = i;
            counting.enqueue(new Waiting("s" + i, "m", List.of("only-free-node")), "c" + i, 0);
        }
        now = 9;
        counting.enqueue(new Waiting("f", "m", List.of("another-node")), "z", 0);
        routed[0] = 0;
        free.put("m", 1);
        counting.slotFreed(NODE);
        assertThat(outcomes).containsExactly("f routed");
        assertThat(routed[0]).as("one stuck retry routed for all five, then the one that fits").isEqualTo(2);
    }

    @Test
    void aRetryGoesBeforeAFirstAttemptOfItsClassButNeverBeforeAHigherClass() {
        free.put("m", 0);
        enqueueRoomyRetry("retry0", "m", "a", 0);
        enqueueAt(5, "first0", "m", "b", 0);
        enqueueAt(6, "first2", "m", "c", 2);
        slotsFree(2);
        assertThat(outcomes).containsExactly("first2 routed", "retry0 routed");
        slotsFree(1);
        assertThat(outcomes).containsExactly("first2 routed", "retry0 routed", "first0 routed");
    }

    @Test
    void aHigherClassGoesFirstAcrossModelsThatShareNodes() {
        int[] pool = {0}; // one node serving both models
        GatewayQueue shared = new GatewayQueue(10, Duration.ofSeconds(10), Ticker.ofNanos(() -> now), w -> {
            if (pool[0] == 0) {
                return Route.Refused.FULL;
            }
            pool[0]--;
            return new Route.To(Lease.take(NODE), false, false, null);
        }, registry);
        shared.enqueue(new Waiting("y5", "y"), "a", 5);
        now = 1;
        shared.enqueue(new Waiting("y0", "y"), "b", 0);
        now = 2;
        shared.enqueue(new Waiting("x3", "x"), "c", 3);
        now = 3;
        shared.enqueue(new Waiting("x0", "x"), "d", 0);
        pool[0] = 3;
        shared.slotFreed(NODE);
        assertThat(outcomes).as("class first whatever the model, then the oldest")
                .containsExactly("y5 routed", "x3 routed", "y0 routed");
    }

    @Test
    void whatIsQueuedIsKnownPerModelWithoutTheLock() {
        free.put("m", 0);
        enqueue("a", "m", "a", 0);
        assertThat(queue.queued("m")).isTrue();
        assertThat(queue.queued("n")).isFalse();
        assertThat(queue.queued(null)).isFalse();
        slotsFree(1);
        assertThat(queue.queued("m")).isFalse();
    }

    @Test
    void aWaiterWhoseLoopRefusesTheRouteGivesItsSlotBack() {
        Node node = Node.of(Heartbeat.builder("n9", "http://127.0.0.1:9").capacity(1).build(), Instant.EPOCH,
                new InFlight());
        GatewayQueue q = new GatewayQueue(3, Duration.ofSeconds(10), Ticker.ofNanos(() -> now), w -> {
            Lease lease = Lease.take(node);
            return lease != null ? new Route.To(lease, false, false, null) : Route.Refused.FULL;
        }, registry);
        GatewayQueue.Waiter shutDown = new Waiting("x", "m") {
            @Override
            public void routed(Route.To route) {
                throw new RejectedExecutionException("event loop shut down");
            }
        };
        node.inFlight().increment();
        q.enqueue(shutDown, "a", 0);
        node.inFlight().decrement();
        q.slotFreed(NODE);
        assertThat(q.depth()).isZero();
        assertThat(node.inFlight().get()).as("the claimed slot was given back").isZero();
    }

    @Test
    void aHigherPriorityKeyIsServedFirst() {
        free.put("m", 0);
        enqueue("low", "m", "a", 0);
        enqueue("high", "m", "b", 2);
        slotsFree(1);
        assertThat(outcomes).containsExactly("high routed");
    }

    @Test
    void aSlotFreeAlreadyServesTheNewcomerAtOnce() {
        free.put("m", 1);
        assertThat(enqueue("x", "m", "a", 0)).isNotNull();
        assertThat(outcomes).containsExactly("x routed");
        assertThat(queue.depth()).isZero();
    }

    @Test
    void aFullModelQueueRefusesButOthersStillQueue() {
        free.put("m", 0);
        free.put("n", 0);
        for (int i = 0; i < 3; i++) {
            assertThat(enqueue("m" + i, "m", "a", 0)).isNotNull();
        }
        assertThat(enqueue("m3", "m", "a", 0)).isNull();
        assertThat(enqueue("n0", "n", "a", 0)).isNotNull();
        assertThat(rejected()).isEqualTo(1);
        assertThat(queue.depth()).isEqualTo(4);
    }

    @Test
    void aFullQueueMakesRoomForACallerWithFewerWaitingByPushingOutTheNewestOfTheMost() {
        free.put("m", 0);
        enqueueAt(1, "h1", "m", "heavy", 0);
        enqueueAt(2, "h2", "m", "heavy", 0);
        enqueueAt(3, "h3", "m", "heavy", 0);
        now = 10;
        assertThat(enqueue("l1", "m", "light", 0)).isNotNull(); // heavy 3 against light 0: h3 makes room
        assertThat(outcomes).containsExactly("h3 overloaded retry-after 1");
        assertThat(enqueue("l2", "m", "light", 0)).isNull(); // heavy 2 against light 1: it would end up ahead
        assertThat(enqueue("h4", "m", "heavy", 0)).isNull();
        assertThat(exits("pushed_out")).isEqualTo(1);
        assertThat(rejected()).isEqualTo(2);
        assertThat(registry.get("heartgate_queue_wait").timer().count()).isEqualTo(1);
        assertThat(queue.depth()).isEqualTo(3);
        slotsFree(3);
        assertThat(outcomes).containsExactly("h3 overloaded retry-after 1", "h1 routed", "l1 routed", "h2 routed");
    }

    @Test
    void aPushedOutRequestWhoseClientThenHangsUpChangesNothing() {
        free.put("m", 0);
        enqueue("h1", "m", "heavy", 0);
        enqueue("h2", "m", "heavy", 0);
        FairQueue.Ticket<GatewayQueue.Waiter> h3 = enqueue("h3", "m", "heavy", 0);
        enqueue("l1", "m", "light", 0);
        queue.cancel(h3);
        assertThat(queue.depth()).isEqualTo(3);
        assertThat(exits("client_gone")).isZero();
    }

    @Test
    void aFullQueueWithASlotJustFreedServesItsHeadRatherThanPushAnyoneOut() {
        free.put("m", 0);
        enqueue("h1", "m", "heavy", 0);
        enqueue("h2", "m", "heavy", 0);
        enqueue("h3", "m", "heavy", 0);
        free.put("m", 1); // freed, and its notice has not reached the queue yet
        assertThat(enqueue("l1", "m", "light", 0)).isNotNull();
        assertThat(outcomes).containsExactly("h1 routed");
        assertThat(exits("pushed_out")).isZero();
        assertThat(queue.depth()).isEqualTo(3);
    }

    @Test
    void aFullQueueOfRetriesGivesWayTheSameWay() {
        free.put("m", 0);
        for (int i = 1; i <= 3; i++) {
            enqueueRetry("r" + i, "m", "heavy", 0);
        }
        assertThat(enqueueRetry("s1", "m", "light", 0)).isNotNull();
        assertThat(outcomes).containsExactly("r3 overloaded retry-after 1");
        assertThat(queue.depth()).isEqualTo(3);
    }

    @Test
    void firstAttemptsAndRetriesShareTheModelsBound() {
        free.put("m", 0);
        enqueue("f1", "m", "a", 0);
        enqueueRetry("r1", "m", "b", 0);
        enqueue("f2", "m", "c", 0);
        assertThat(queue.depth()).isEqualTo(3);
        assertThat(enqueueRetry("r2", "m", "d", 0)).isNull();
        assertThat(enqueue("f3", "m", "e", 0)).isNull();
        assertThat(rejected()).isEqualTo(2);
        assertThat(queue.depth()).isEqualTo(3);
    }

    @Test
    void aFullQueueCountsACallersFirstAttemptsAndRetriesTogetherWhenMakingRoom() {
        free.put("m", 0);
        enqueueAt(1, "h1", "m", "heavy", 0);
        enqueueRetryAt(2, "hr1", "m", "heavy", 0);
        enqueueAt(3, "o1", "m", "other", 0);
        now = 4; // heavy has 2 waiting across both parts, light none: heavy's newest, the retry, makes room
        assertThat(enqueue("l1", "m", "light", 0)).isNotNull();
        assertThat(outcomes).containsExactly("hr1 overloaded retry-after 1");
        assertThat(enqueue("l2", "m", "light", 0)).isNull(); // now 1, 1 and 1: nobody has two more
        assertThat(queue.depth()).isEqualTo(3);
    }

    @Test
    void aHigherClassFirstAttemptPushesOutALowerClassRetry() {
        free.put("m", 0);
        enqueueAt(1, "f1", "m", "a", 1);
        enqueueAt(2, "f2", "m", "b", 1);
        enqueueRetryAt(3, "r1", "m", "c", 0); // the lowest class: only a retry
        now = 4;
        assertThat(enqueue("f3", "m", "d", 1)).isNotNull();
        assertThat(outcomes).containsExactly("r1 overloaded retry-after 1");
        assertThat(queue.depth()).isEqualTo(3);
    }

    @Test
    void ofCallersEquallyLongTheOneWhoseNewestCameLastGivesWayWhicheverPartItIsIn() {
        free.put("m", 0);
        enqueueAt(1, "a1", "m", "a", 0);
        enqueueRetryAt(2, "br", "m", "b", 0); // b's one request, a retry
        enqueueAt(3, "x1", "m", "x", 1);
        now = 4; // a and b have one each in the lowest class; b's came last
        assertThat(enqueue("y1", "m", "y", 1)).isNotNull();
        assertThat(outcomes).containsExactly("br overloaded retry-after 1");
    }

    @Test
    void aHigherClassPushesOutTheLowestClassAndNeverTheReverse() {
        free.put("m", 0);
        enqueue("low1", "m", "low", 0);
        enqueue("mid1", "m", "mid", 1);
        enqueue("mid2", "m", "mid", 1);
        assertThat(enqueue("high1", "m", "high", 2)).isNotNull();
        assertThat(outcomes).containsExactly("low1 overloaded retry-after 1");
        assertThat(enqueue("low2", "m", "low", 0)).isNull();
        assertThat(enqueue("low3", "m", "other", 0)).isNull();
        slotsFree(3);
        assertThat(outcomes).containsExactly("low1 overloaded retry-after 1", "high1 routed", "mid1 routed", "mid2 routed");
    }

    @Test
    void aModelThatIsFullDoesNotHoldUpAnother() {
        free.put("m", 0);
        free.put("n", 0);
        enqueue("m0", "m", "a", 0);
        enqueueAt(5, "n0", "n", "a", 0);
        free.put("n", 1);
        queue.slotFreed(NODE);
        assertThat(outcomes).containsExactly("n0 routed");
    }

    @Test
    void theWaitLimitAnswersOverloadedWithRetryAfterFromRecentWaitsTimeoutsIncluded() {
        free.put("m", 0);
        enqueue("a", "m", "a", 0);
        now = Duration.ofSeconds(4).toNanos();
        slotsFree(1); // waited 4 s: the mean wait becomes 0.5 s
        assertThat(queue.retryAfterSeconds()).isEqualTo(1);
        enqueue("b", "m", "a", 0);
        now += Duration.ofSeconds(10).toNanos() - 1;
        queue.sweep();
        assertThat(outcomes).containsExactly("a routed");
        now += 1;
        queue.sweep();
        // b's 10 s count too: 0.5 + (10 - 0.5) / 8 = 1.69 s, so a queue where requests time out says so
        assertThat(outcomes).containsExactly("a routed", "b overloaded retry-after 2");
        assertThat(queue.depth()).isZero();
        assertThat(registry.get("heartgate_queue_wait").timer().count()).isEqualTo(2);
    }

    @Test
    void retryAfterFollowsTheMeanWaitUpToTheLimit() {
        free.put("m", 0);
        for (int i = 0; i < 40; i++) {
            enqueue("w" + i, "m", "c" + i, 0);
            now += Duration.ofSeconds(30).toNanos();
            slotsFree(1);
        }
        assertThat(queue.retryAfterSeconds()).isEqualTo(10); // the mean tends to 30 s: capped at the 10 s limit
    }

    @Test
    void aClientThatHangsUpLeavesAtOnce() {
        free.put("m", 0);
        FairQueue.Ticket<GatewayQueue.Waiter> t = enqueue("gone", "m", "a", 0);
        enqueue("stays", "m", "a", 0);
        queue.cancel(t);
        queue.cancel(t);
        assertThat(queue.depth()).isEqualTo(1);
        slotsFree(5);
        assertThat(outcomes).containsExactly("stays routed");
        assertThat(exits("client_gone")).isEqualTo(1);
    }

    @Test
    void aModelWhoseNodesLeftIsRefusedNotKeptWaiting() {
        free.put("m", 0);
        enqueue("a", "m", "a", 0);
        free.remove("m");
        queue.sweep();
        assertThat(outcomes).containsExactly("a model_not_found");
        assertThat(queue.depth()).isZero();
    }

    /** Slots per model in all, for the reserve; 12 unless set. */
    private final Map<String, Integer> total = new HashMap<>();

    /** A queue keeping the last {@code reserve} free slots of a model (counted in {@link #free}) from flooding callers. */
    private GatewayQueue reserving(int reserve) {
        return reserving(100, reserve);
    }

    /** As {@link #reserving(int)}, holding at most {@code max} requests per model. */
    private GatewayQueue reserving(int max, int reserve) {
        return new GatewayQueue(max, Duration.ofMinutes(5), Ticker.ofNanos(() -> now), this::route, reserve, // outlasts a presence
                w -> new FreeSlots(free.getOrDefault(w.facts().model(), 0), total.getOrDefault(w.facts().model(), 12)),
                registry);
    }

    /** Queues six first attempts for model m, h1 to h6, of the caller "heavy" in class {@code priority}: a flood. */
    private List<FairQueue.Ticket<GatewayQueue.Waiter>> flood(GatewayQueue q, int priority) {
        List<FairQueue.Ticket<GatewayQueue.Waiter>> tickets = new ArrayList<>();
        for (int i = 1; i <= 6; i++) {
            tickets.add(q.enqueue(new Waiting("h" + i, "m"), "heavy", priority));
        }
        return tickets;
    }

    /** A request of {@code caller} in class {@code priority} for {@code model} came through {@code q} and went at once. */
    private void cameLately(GatewayQueue q, String caller, String model, int priority) {
        free.put(model, 1);
        q.enqueue(new Waiting("seen", model), caller, priority);
        assertThat(outcomes).containsExactly("seen routed");
        outcomes.clear();
    }

    /** With no slot free, queues {@link #flood} in class {@code priority}; then frees two slots of m and sweeps. */
    private void floodThenFreeTwo(GatewayQueue q, int priority) {
        free.put("m", 0);
        flood(q, priority);
        free.put("m", 2);
        q.sweep();
    }

    @Test
    void aFloodingCallerLeavesTheReservedSlotsToCallersThatAreNot() {
        GatewayQueue q = reserving(2);
        free.put("m", 0);
        for (int i = 1; i <= 6; i++) {
            q.enqueue(new Waiting("h" + i, "m"), "heavy", 0); // six waiting: more than a burst
        }
        q.enqueue(new Waiting("l1", "m"), "light", 0);
        free.put("m", 3);
        q.sweep();
        assertThat(outcomes).as("one slot above the reserve for the flood, one reserved for the light caller")
                .containsExactly("h1 routed", "l1 routed");
        assertThat(free.get("m")).as("held free").isEqualTo(1);

        q.enqueue(new Waiting("l2", "m"), "light", 0);
        assertThat(outcomes).last().isEqualTo("l2 routed");
        assertThat(q.depth()).isEqualTo(5);
    }

    @Test
    void aCallerWithABurstOrLessWaitingMayTakeTheReservedSlots() {
        GatewayQueue q = reserving(2);
        cameLately(q, "light", "m", 0);
        floodThenFreeTwo(q, 0);
        assertThat(outcomes).as("six waiting: held back from the last two").isEmpty();
        free.put("m", 4);
        q.sweep();
        // h1 and h2 take the two above the reserve; with four left waiting, h3 and h4 take the reserve.
        assertThat(outcomes).containsExactly("h1 routed", "h2 routed", "h3 routed", "h4 routed");
        assertThat(q.depth()).isEqualTo(2);
    }

    @Test
    void aFloodOfAHigherClassHeldBackFromTheReserveLetsNoLowerClassTakeIt() {
        GatewayQueue q = reserving(2);
        free.put("m", 0);
        flood(q, 1);
        q.enqueue(new Waiting("low", "m"), "light", 0);
        q.enqueue(new Waiting("peer", "m"), "other", 1);
        free.put("m", 2);
        q.sweep();
        assertThat(outcomes).as("a caller of the flood's class may; a lower class may not")
                .containsExactly("peer routed");
    }

    @Test
    void retriesAreNeverHeldBack() {
        GatewayQueue q = reserving(2);
        cameLately(q, "light", "m", 0);
        free.put("m", 0);
        for (int i = 1; i <= 6; i++) {
            q.enqueue(new Waiting("r" + i, "m", List.of("another-node")), "heavy", 0);
        }
        free.put("m", 2);
        q.sweep();
        assertThat(outcomes).containsExactly("r1 routed", "r2 routed");
    }

    @Test
    void withoutAReserveEveryFreeSlotIsUsed() {
        GatewayQueue q = reserving(0);
        cameLately(q, "light", "m", 0);
        floodThenFreeTwo(q, 0);
        assertThat(outcomes).containsExactly("h1 routed", "h2 routed");
    }

    @Test
    void aFloodHeldBackOnOneModelHoldsUpNoLowerClassOfAnother() {
        GatewayQueue q = reserving(1);
        cameLately(q, "peer", "a", 1);
        free.put("a", 0);
        free.put("b", 0);
        for (int i = 1; i <= 6; i++) {
            q.enqueue(new Waiting("a" + i, "a"), "batch", 1);
        }
        q.enqueue(new Waiting("b1", "b"), "chat", 0);
        free.put("a", 1); // a's one free slot is its reserve
        free.put("b", 1); // b's nodes share nothing with a's
        q.sweep();
        assertThat(outcomes).containsExactly("b1 routed");
    }

    @Test
    void aNewcomerMeetingAFullQueueTakesNoReservedSlot() {
        GatewayQueue q = reserving(6, 2);
        cameLately(q, "peer", "m", 1);
        free.put("m", 0);
        flood(q, 1);
        free.put("m", 2);
        assertThat(q.enqueue(new Waiting("low", "m"), "light", 0)).as("below the class just held back: refused")
                .isNull();
        assertThat(q.enqueue(new Waiting("h7", "m"), "heavy", 1)).as("the flood's own: refused").isNull();
        assertThat(outcomes).isEmpty();
        assertThat(free.get("m")).isEqualTo(2);
    }

    @Test
    void aReserveAsLargeAsTheModelsSlotsLeavesTheFloodOne() {
        GatewayQueue q = reserving(2);
        total.put("m", 2);
        cameLately(q, "light", "m", 0);
        floodThenFreeTwo(q, 0);
        assertThat(outcomes).containsExactly("h1 routed");
        assertThat(free.get("m")).isEqualTo(1);
    }

    @Test
    void theClassHeldBackInOnePassHoldsUpNoLowerClassInTheNext() {
        GatewayQueue q = reserving(2);
        cameLately(q, "peer", "m", 1);
        free.put("m", 0);
        List<FairQueue.Ticket<GatewayQueue.Waiter>> flood = flood(q, 1);
        q.enqueue(new Waiting("low", "m"), "light", 0);
        free.put("m", 2);
        q.sweep();
        assertThat(outcomes).isEmpty();
        flood.forEach(q::cancel); // the flood's clients give up
        q.sweep();
        assertThat(outcomes).containsExactly("low routed");
    }

    @Test
    void aFloodAloneGetsEverySlot() {
        GatewayQueue q = reserving(2);
        floodThenFreeTwo(q, 0); // its own first four came within a burst: it is not someone else
        assertThat(outcomes).containsExactly("h1 routed", "h2 routed");
    }

    @Test
    void slotsAreHeldForAnotherCallerUntilAMinuteAfterItsLastRequest() {
        GatewayQueue q = reserving(2);
        cameLately(q, "light", "m", 0);
        free.put("m", 0);
        flood(q, 0);
        free.put("m", 2);
        now += Reserve.PRESENCE.toNanos();
        q.sweep();
        assertThat(outcomes).as("a minute after the light caller's request: held").isEmpty();
        now += 1;
        q.sweep();
        assertThat(outcomes).as("gone a minute and more: every slot to the flood").containsExactly("h1 routed", "h2 routed");
    }

    @Test
    void noSlotIsHeldForALowerClassWhichMayNotTakeIt() {
        GatewayQueue q = reserving(2);
        cameLately(q, "light", "m", 0);
        floodThenFreeTwo(q, 1);
        assertThat(outcomes).containsExactly("h1 routed", "h2 routed");
    }

    @Test
    void noSlotIsHeldForAnotherCallerThatFloodsToo() {
        GatewayQueue q = reserving(2);
        free.put("m", 0);
        flood(q, 0);
        for (int i = 1; i <= 6; i++) {
            q.enqueue(new Waiting("o" + i, "m"), "other", 0); // its first four came within a burst
        }
        free.put("m", 2);
        q.sweep();
        assertThat(outcomes).as("both flood: turns between them, nothing held").containsExactly("h1 routed", "o1 routed");
    }

    @Test
    void slotsAreHeldForACallerOfAHigherClassToo() {
        GatewayQueue q = reserving(2);
        cameLately(q, "vip", "m", 1);
        floodThenFreeTwo(q, 0);
        assertThat(outcomes).isEmpty();
    }

    @Test
    void floodsThatCameAfterAnotherCallerDoNotMakeItForgotten() {
        GatewayQueue q = reserving(2);
        cameLately(q, "light", "m", 0);
        free.put("m", 0);
        now += 1_000_000_000L;
        flood(q, 0); // each flood's first four came within a burst, after the light caller
        for (int i = 1; i <= 6; i++) {
            q.enqueue(new Waiting("o" + i, "m"), "other", 0);
        }
        free.put("m", 2);
        q.sweep();
        assertThat(outcomes).as("the light caller came a second ago: both floods held").isEmpty();
    }
}
