package io.heartgate.scheduler.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.Route;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.time.Ticker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The dispatcher, the one way first attempts and retries get a node, with the gateway queue on a
 * node of one slot; the request's event loop is a list of tasks the test runs when it chooses, so a
 * client can hang up between the queue finding a slot and the loop taking it.
 */
class DispatcherTest {

    private final Node node = Node.of(Heartbeat.builder("n1", "http://127.0.0.1:1").capacity(1).build(), Instant.EPOCH,
            new InFlight());
    private final TableSnapshot table = new TableSnapshot(1, List.of(node));
    private final RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0));
    private long now;
    private final RateLimits limits = new RateLimits(Ticker.ofNanos(() -> now));
    private final Dispatcher dispatcher = dispatcher(10);
    private final List<Runnable> loop = new ArrayList<>();

    private record Key(String name, long rpm, long tpm) implements Quota {
    }

    private Dispatcher dispatcher(int maxQueue) {
        GatewayQueue queue = new GatewayQueue(maxQueue, Duration.ofSeconds(5), Ticker.ofNanos(() -> now),
                w -> selector.select(table, w.facts(), w.tried(), EjectionView.NONE), new SimpleMeterRegistry());
        return new Dispatcher(() -> table, selector, EjectionView.NONE, queue, limits);
    }

    private void runLoop() {
        while (!loop.isEmpty()) {
            loop.remove(0).run();
        }
    }

    /** A request that notes its outcome. */
    private final class Request implements Dispatcher.Outcome {
        final RequestFacts facts;
        Route.To route;
        Route.Refused refused;
        int retryAfter = -1;
        String overloaded;
        Map<String, String> limitHeaders;
        boolean gone;
        FairQueue.Ticket<GatewayQueue.Waiter> ticket;

        Request(String caller, String model, int priority) {
            facts = RequestFacts.ofModel(model).withCaller(caller, priority);
        }

        Request() {
            this(null, null, 0);
        }

        Request send(Dispatcher d) {
            ticket = d.dispatch(facts, List.of(), facts.caller() == null ? "10.0.0.1" : facts.caller(), loop::add, this);
            return this;
        }

        void hangUp(Dispatcher d) {
            gone = true;
            if (ticket != null) {
                d.cancel(ticket);
            }
        }

        @Override
        public void routed(Route.To r) {
            route = r;
        }

        @Override
        public void refused(Route.Refused r) {
            refused = r;
        }

        @Override
        public void queueFull(int retryAfterSeconds) {
            retryAfter = retryAfterSeconds;
        }

        @Override
        public void overloaded(String message, int retryAfterSeconds, Map<String, String> headers) {
            overloaded = message;
            retryAfter = retryAfterSeconds;
            limitHeaders = headers;
        }

        @Override
        public boolean gone() {
            return gone;
        }
    }

    @Test
    void aRequestWithRoomGoesAtOnceHoldingItsSlotUntilItsLeaseIsReleasedOnce() {
        Request first = new Request().send(dispatcher);
        assertThat(first.ticket).isNull();
        assertThat(first.route.node()).isSameAs(node);
        assertThat(node.inFlight().get()).isEqualTo(1);
        dispatcher.release(first.route.lease());
        dispatcher.release(first.route.lease()); // a second path reaching the end gives nothing back twice
        assertThat(node.inFlight().get()).isZero();
    }

    @Test
    void aQueuedRequestGoesOnWithItsSlotClaimedOnceOneFrees() {
        Request first = new Request().send(dispatcher);
        Request second = new Request().send(dispatcher);
        assertThat(second.route).isNull();
        assertThat(dispatcher.queue().depth()).isEqualTo(1);
        dispatcher.release(first.route.lease()); // the first answer ends: the queue hears of it
        runLoop();
        assertThat(second.route.node()).isSameAs(node);
        assertThat(node.inFlight().get()).isEqualTo(1);
    }

    @Test
    void aRetryAndAFirstAttemptWaitInTheSameQueue() {
        Request first = new Request().send(dispatcher);
        Request retry = new Request();
        retry.ticket = dispatcher.dispatch(retry.facts, List.of("n0"), "10.0.0.2", loop::add, retry);
        assertThat(dispatcher.queue().depth()).isEqualTo(1);
        dispatcher.release(first.route.lease());
        runLoop();
        assertThat(retry.route.node()).isSameAs(node);
    }

    @Test
    void aRequestForAnotherModelDoesNotTakeAFreedSlotAheadOfAHigherClassWaitingForTheNode() {
        Request first = new Request(null, "a:latest", 1).send(dispatcher); // n1 serves any model: its one slot
        Request waiting = new Request(null, "a:latest", 1).send(dispatcher);
        assertThat(dispatcher.queue().depth()).isEqualTo(1);
        first.route.lease().release(); // the first answer ends; its loop has not told the queue yet

        Request other = new Request(null, "b:latest", 0).send(dispatcher); // nothing queued for b
        runLoop();

        assertThat(waiting.route).isNotNull();
        assertThat(other.route).as("it waits behind the higher class").isNull();
        assertThat(dispatcher.queue().depth()).isEqualTo(1);
        assertThat(node.inFlight().get()).isEqualTo(1);
    }

    @Test
    void aRequestWhoseClientHangsUpWhileQueuedLeavesAtOnce() {
        Request first = new Request().send(dispatcher);
        Request gone = new Request().send(dispatcher);
        gone.hangUp(dispatcher);
        assertThat(dispatcher.queue().depth()).isZero();
        dispatcher.release(first.route.lease());
        runLoop();
        assertThat(node.inFlight().get()).as("no slot claimed for it").isZero();
    }

    @Test
    void aClientThatHangsUpAsItsRequestLeavesTheQueueGivesTheSlotToTheNext() {
        Request first = new Request().send(dispatcher);
        Request leaving = new Request().send(dispatcher);
        Request next = new Request().send(dispatcher);
        assertThat(dispatcher.queue().depth()).isEqualTo(2);
        dispatcher.release(first.route.lease()); // the slot is claimed for `leaving`; its loop has not run yet
        assertThat(node.inFlight().get()).isEqualTo(1);
        leaving.gone = true;
        runLoop(); // `leaving` gives the slot back, and the queue hands it to `next`
        runLoop();
        assertThat(leaving.route).isNull();
        assertThat(next.route).isNotNull();
        assertThat(node.inFlight().get()).isEqualTo(1);
        assertThat(dispatcher.queue().depth()).isZero();
    }

    @Test
    void theWaitLimitAnswers503OverloadedWithRetryAfter() {
        new Request().send(dispatcher);
        Request late = new Request().send(dispatcher);
        now = Duration.ofSeconds(5).toNanos();
        dispatcher.queue().sweep();
        runLoop();
        assertThat(late.overloaded).contains("queue timeout");
        assertThat(late.retryAfter).isEqualTo(1);
    }

    @Test
    void aRequestRefusedAtOnceByAFullQueueKeepsItsRequestTokenSpent() {
        // A client looping on a full queue must still meet its rpm=: a cheap 429, not the queue's lock.
        Dispatcher refusing = dispatcher(0);
        Key carol = new Key("carol", 2, 0);
        assertThat(limits.admit(carol).allowed()).isTrue();
        new Request("carol", null, 0).send(refusing); // takes the node's one slot
        assertThat(limits.admit(carol).allowed()).isTrue();
        Request refused = new Request("carol", null, 0).send(refusing);
        assertThat(refused.retryAfter).as("answered 503 at once").isGreaterThan(0);
        assertThat(refused.overloaded).isNull();
        assertThat(limits.admit(carol).allowed()).isFalse();
    }

    @Test
    void aRequestAnsweredOverloadedAfterWaitingGetsItsKeysRequestTokenBack() {
        // The client is told to come back after Retry-After; had the refusal spent one of its
        // requests per minute, coming back would find it over its limit.
        Key carol = new Key("carol", 2, 0);
        assertThat(limits.admit(carol).allowed()).isTrue(); // as the Limits stage does before routing
        new Request("carol", null, 0).send(dispatcher); // takes the node's one slot
        assertThat(limits.admit(carol).allowed()).isTrue();
        Request late = new Request("carol", null, 0).send(dispatcher);
        now = Duration.ofSeconds(5).toNanos(); // a sixth of a token refilled
        dispatcher.queue().sweep();
        runLoop();
        assertThat(late.overloaded).isNotNull();
        assertThat(late.limitHeaders).containsEntry("x-ratelimit-remaining-requests", "1");
        assertThat(limits.admit(carol).allowed()).as("its token was given back").isTrue();
        assertThat(limits.admit(carol).allowed()).as("and only that one").isFalse();
    }

    @Test
    void noNodeIsARefusalNotAWait() {
        Dispatcher empty = new Dispatcher(() -> TableSnapshot.EMPTY, selector, EjectionView.NONE,
                dispatcher.queue(), limits);
        Request r = new Request();
        r.ticket = empty.dispatch(r.facts, List.of(), "10.0.0.1", loop::add, r);
        assertThat(r.refused).isNotNull();
        assertThat(r.refused.error().wireName()).isEqualTo("no_upstream");
    }
}
