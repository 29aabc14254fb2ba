package io.heartgate.scheduler.proxy.stage;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.scheduler.admission.GatewayQueue;
import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.proxy.policy.Headers;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.trust.ApiKeys;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The routing stage with the gateway queue, on a call whose event loop is a list of tasks the test
 * runs when it chooses: so a client can hang up between the queue finding a slot and the loop
 * taking it.
 */
class RoutingQueueTest {

    private final Node node = Node.of(Heartbeat.builder("n1", "http://127.0.0.1:1").capacity(1).build(), Instant.EPOCH,
            new InFlight());
    private final TableSnapshot table = new TableSnapshot(1, List.of(node));
    private final RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0));
    private long now;
    private final GatewayQueue queue = new GatewayQueue(10, Duration.ofSeconds(5), () -> now,
            w -> selector.select(table, w.facts(), w.tried(), EjectionView.NONE), new SimpleMeterRegistry());
    private final RateLimits limits = new RateLimits(() -> now);
    private final Routing routing = new Routing(() -> table, selector, EjectionView.NONE, queue, limits);
    private final List<Runnable> loop = new ArrayList<>();

    private void runLoop() {
        while (!loop.isEmpty()) {
            loop.remove(0).run();
        }
    }

    /** A call on the test's loop that notes how it ended. */
    private final class TestCall implements Call {
        final String caller;
        final String model;
        final int priority;
        final Map<String, String> responseHeaders = new HashMap<>();
        Route.To route;
        Answer answer;
        boolean proceeded;
        boolean ended;
        Runnable cancelHook;

        TestCall() {
            this(null);
        }

        /** A call of the API key named {@code caller}. */
        TestCall(String caller) {
            this(caller, "m:latest", 0);
        }

        /** A call of {@code caller} (or of its address) for {@code model} in class {@code priority}. */
        TestCall(String caller, String model, int priority) {
            this.caller = caller;
            this.model = model;
            this.priority = priority;
        }

        @Override
        public String method() {
            return "POST";
        }

        @Override
        public String uri() {
            return "/v1/chat/completions";
        }

        @Override
        public String clientIp() {
            return "10.0.0.1";
        }

        @Override
        public Headers headers() {
            throw new UnsupportedOperationException();
        }

        @Override
        public RequestFacts facts() {
            RequestFacts facts = RequestFacts.ofModel(model);
            return caller == null && priority == 0 ? facts : facts.withCaller(caller, priority);
        }

        @Override
        public void facts(RequestFacts updated) {
        }

        @Override
        public void route(Route.To first) {
            route = first;
        }

        @Override
        public Route.To route() {
            return route;
        }

        @Override
        public void proceed() {
            proceeded = true;
            ended = true;
        }

        @Override
        public void answer(Answer a) {
            answer = a;
            ended = true;
        }

        @Override
        public boolean ended() {
            return ended;
        }

        @Override
        public boolean namesModelTwice() {
            return false;
        }

        @Override
        public byte[] body() {
            return new byte[0];
        }

        @Override
        public boolean body(byte[] replacement) {
            return false;
        }

        @Override
        public void responseHeaders(Map<String, String> headers) {
            responseHeaders.putAll(headers);
        }

        @Override
        public void usageUnasked() {
            throw new AssertionError("routing never rewrites a body");
        }

        @Override
        public void later(Runnable task) {
            loop.add(task);
        }

        @Override
        public void onCancel(Runnable hook) {
            cancelHook = hook;
        }

        /** The client hangs up while a stage holds the call. */
        void hangUp() {
            ended = true;
            if (cancelHook != null) {
                cancelHook.run();
            }
        }
    }

    @Test
    void aQueuedCallGoesOnWithItsSlotClaimedOnceOneFrees() {
        TestCall first = new TestCall();
        routing.handle(first);
        assertThat(first.proceeded).isTrue();
        assertThat(first.route.held()).isTrue();
        TestCall second = new TestCall();
        routing.handle(second);
        assertThat(second.ended).isFalse();
        assertThat(queue.depth()).isEqualTo(1);
        node.inFlight().decrement(); // the first answer ends
        queue.slotFreed(node);
        runLoop();
        assertThat(second.proceeded).isTrue();
        assertThat(node.inFlight().get()).isEqualTo(1);
    }

    @Test
    void aCallForAnotherModelDoesNotTakeAFreedSlotAheadOfAHigherClassWaitingForTheNode() {
        routing.handle(new TestCall(null, "a:latest", 1)); // n1 serves any model: its one slot
        TestCall waiting = new TestCall(null, "a:latest", 1);
        routing.handle(waiting);
        assertThat(queue.depth()).isEqualTo(1);
        node.inFlight().decrement(); // the first answer ends; its loop has not told the queue yet

        TestCall other = new TestCall(null, "b:latest", 0); // nothing queued for b
        routing.handle(other);
        runLoop();

        assertThat(waiting.proceeded).isTrue();
        assertThat(other.proceeded).as("it waits behind the higher class").isFalse();
        assertThat(queue.depth()).isEqualTo(1);
        assertThat(node.inFlight().get()).isEqualTo(1);
    }

    @Test
    void aCallWhoseClientHangsUpWhileQueuedLeavesAtOnce() {
        routing.handle(new TestCall());
        TestCall gone = new TestCall();
        routing.handle(gone);
        gone.hangUp();
        assertThat(queue.depth()).isZero();
        node.inFlight().decrement();
        queue.slotFreed(node);
        runLoop();
        assertThat(node.inFlight().get()).as("no slot claimed for it").isZero();
    }

    @Test
    void aClientThatHangsUpAsItsCallLeavesTheQueueGivesTheSlotToTheNext() {
        routing.handle(new TestCall());
        TestCall leaving = new TestCall();
        routing.handle(leaving);
        TestCall next = new TestCall();
        routing.handle(next);
        assertThat(queue.depth()).isEqualTo(2);
        node.inFlight().decrement();
        queue.slotFreed(node); // the slot is claimed for `leaving`; its loop has not run yet
        assertThat(node.inFlight().get()).isEqualTo(1);
        leaving.hangUp();
        runLoop(); // `leaving` gives the slot back, and the queue hands it to `next`
        runLoop();
        assertThat(leaving.proceeded).isFalse();
        assertThat(next.proceeded).isTrue();
        assertThat(node.inFlight().get()).isEqualTo(1);
        assertThat(queue.depth()).isZero();
    }

    @Test
    void theWaitLimitAnswers503OverloadedWithRetryAfter() {
        routing.handle(new TestCall());
        TestCall late = new TestCall();
        routing.handle(late);
        now = Duration.ofSeconds(5).toNanos();
        queue.sweep();
        runLoop();
        assertThat(late.answer.status()).isEqualTo(503);
        assertThat(late.answer.error().wireName()).isEqualTo("overloaded");
        assertThat(late.answer.headers()).containsEntry("Retry-After", "1");
    }

    @Test
    void aCallRefusedAtOnceByAFullQueueKeepsItsRequestTokenSpent() {
        // A client looping on a full queue must still meet its rpm=: a cheap 429, not the queue's lock.
        GatewayQueue none = new GatewayQueue(0, Duration.ofSeconds(5), () -> now,
                w -> selector.select(table, w.facts(), w.tried(), EjectionView.NONE), new SimpleMeterRegistry());
        Routing refusing = new Routing(() -> table, selector, EjectionView.NONE, none, limits);
        ApiKeys.Key carol = new ApiKeys.Key("carol", Set.of(), 0, 2, 0);
        assertThat(limits.admit(carol).allowed()).isTrue();
        refusing.handle(new TestCall("carol")); // takes the node's one slot
        assertThat(limits.admit(carol).allowed()).isTrue();
        TestCall refused = new TestCall("carol");
        refusing.handle(refused);
        assertThat(refused.answer.status()).isEqualTo(503);
        assertThat(refused.answer.error().wireName()).isEqualTo("overloaded");
        assertThat(limits.admit(carol).allowed()).isFalse();
    }

    @Test
    void aCallAnsweredOverloadedGetsItsKeysRequestTokenBack() {
        // The client is told to come back after Retry-After; had the refusal spent one of its
        // requests per minute, coming back would find it over its limit.
        ApiKeys.Key carol = new ApiKeys.Key("carol", Set.of(), 0, 2, 0);
        assertThat(limits.admit(carol).allowed()).isTrue(); // as the Limits stage does before routing
        routing.handle(new TestCall("carol")); // takes the node's one slot
        assertThat(limits.admit(carol).allowed()).isTrue();
        TestCall late = new TestCall("carol");
        routing.handle(late);
        now = Duration.ofSeconds(5).toNanos(); // a sixth of a token refilled
        queue.sweep();
        runLoop();
        assertThat(late.answer.status()).isEqualTo(503);
        assertThat(late.responseHeaders).containsEntry("x-ratelimit-remaining-requests", "1");
        assertThat(limits.admit(carol).allowed()).as("its token was given back").isTrue();
        assertThat(limits.admit(carol).allowed()).as("and only that one").isFalse();
    }
}
