package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.time.Ticker;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/** The sweep on a fake ticker: first byte after 1000 ms, idle after 400 ms, checked once a second. */
class TimeoutsTest {

    private final AtomicLong nanos = new AtomicLong(5_000_000_000L);
    private final Timeouts timeouts = new Timeouts(Ticker.ofNanos(nanos::get), 1000, 400);
    private final List<String> events = new ArrayList<>();

    /** Owners that wait for a head until told otherwise. */
    private final Set<String> headArrived = new HashSet<>();

    private Timeouts.Watch watch(String name) {
        return timeouts.watch(new Timeouts.Watched() {
            @Override
            public boolean waitingForHead() {
                return !headArrived.contains(name);
            }

            @Override
            public void firstByteTimedOut() {
                events.add(name + " first-byte");
            }

            @Override
            public void idleTimedOut() {
                events.add(name + " idle");
            }

            @Override
            public String awaitedNode() {
                return name.substring(0, 1); // "a1" waits on node "a"
            }

            @Override
            public String model() {
                return "m";
            }

            @Override
            public boolean streams() {
                return true;
            }

            @Override
            public boolean nodeLost(boolean onlyWithAlternative) {
                if (onlyWithAlternative && name.endsWith("2")) {
                    return false; // "a2" has nowhere better to go
                }
                events.add(name + " moved");
                headArrived.add(name); // the owner moved on: this attempt waits no more
                return true;
            }
        });
    }

    private void at(long ms) {
        nanos.set(5_000_000_000L + ms * 1_000_000);
        timeouts.sweep();
    }

    @Test
    void awaitingSinceListsTheOwnersStillWaitingThatWereSentByThenOldestFirst() {
        Timeouts.Watch a1 = watch("a1");
        Timeouts.Watch b1 = watch("b1");
        Timeouts.Watch c1 = watch("c1");
        at(0);
        a1.awaitHead();
        b1.awaitHead();
        at(300);
        c1.awaitHead();
        headArrived.add("b1");

        List<String> waiting = new ArrayList<>();
        timeouts.awaitingSince(nanos.get() / 1_000_000 - 300, w -> waiting.add(w.awaitedNode()));
        assertThat(waiting).containsExactly("a");
        waiting.clear();
        timeouts.awaitingSince(nanos.get() / 1_000_000, w -> waiting.add(w.awaitedNode()));
        assertThat(waiting).containsExactly("a", "c");
    }

    @Test
    void anOldRequestStillWaitingDoesNotKeepEveryAnsweredEntryBehindIt() {
        Timeouts slow = new Timeouts(Ticker.ofNanos(nanos::get), 600_000, 400); // a long first-byte timeout, as in production
        Set<Integer> answered = new HashSet<>();
        IntFunction<Timeouts.Watch> watchOf = i -> slow.watch(new Timeouts.Watched() {
            public boolean waitingForHead() { return !answered.contains(i); }
            public void firstByteTimedOut() { }
            public void idleTimedOut() { }
            public String awaitedNode() { return "n"; }
            public String model() { return null; }
            public boolean streams() { return true; }
            public boolean nodeLost(boolean onlyWithAlternative) { return false; }
        });
        watchOf.apply(-1).awaitHead(); // waits on and on at the head of the queue
        int most = 0;
        for (int i = 0; i < 100_000; i++) { // 100,000 requests answered behind it, a sweep per 100
            watchOf.apply(i).awaitHead();
            answered.add(i);
            if (i % 100 == 0) {
                nanos.addAndGet(1_000_000);
                slow.sweep();
                most = Math.max(most, slow.pendingEntries());
            }
        }
        assertThat(most).as("entries held at most").isLessThanOrEqualTo(4096 + 100);
    }

    @Test
    void rescueMovesOnlyTheOwnersStillWaitingOnALostNodeAndCountsThemByNode() {
        Timeouts.Watch a1 = watch("a1");
        Timeouts.Watch a2 = watch("a2");
        Timeouts.Watch a3 = watch("a3");
        Timeouts.Watch b1 = watch("b1");
        a1.awaitHead();
        a2.awaitHead();
        a3.awaitHead();
        b1.awaitHead();
        headArrived.add("a3"); // answered: relaying, not waiting

        assertThat(timeouts.rescue(node -> node.equals("a"), node -> false))
                .containsExactly(Map.entry("a", 2));
        assertThat(events).containsExactlyInAnyOrder("a1 moved", "a2 moved");
        assertThat(timeouts.rescue(node -> node.equals("a"), node -> false)).as("moved once").isEmpty();
        assertThat(timeouts.rescue(node -> false, node -> false)).isEmpty();
    }

    @Test
    void aRequestHeldOutOnlyStaysWhenItHasNowhereBetterToGo() {
        Timeouts.Watch a1 = watch("a1");
        Timeouts.Watch a2 = watch("a2");
        a1.awaitHead();
        a2.awaitHead();
        assertThat(timeouts.rescue(node -> true, node -> true)).containsExactly(Map.entry("a", 1));
        assertThat(events).containsExactly("a1 moved");
    }

    @Test
    void aHeadNotArrivedWithinTheFirstByteTimeoutTimesOutOnceAtTheFirstSweepAfterTheDeadline() {
        Timeouts.Watch a = watch("a");
        a.awaitHead();
        at(100);
        Timeouts.Watch b = watch("b");
        b.awaitHead();

        at(999);
        assertThat(events).isEmpty();
        at(1000);
        assertThat(events).containsExactly("a first-byte");
        at(1099);
        assertThat(events).containsExactly("a first-byte");
        at(1100);
        at(5000);
        assertThat(events).containsExactly("a first-byte", "b first-byte");
    }

    @Test
    void aHeadThatArrivedOrANewAttemptStopsTheEarlierClock() {
        Timeouts.Watch a = watch("a");
        a.awaitHead();
        headArrived.add("a");
        Timeouts.Watch b = watch("b");
        b.awaitHead();
        at(600);
        b.awaitHead(); // a retry: its own deadline, 1000 ms from now

        at(1500);
        assertThat(events).isEmpty();
        at(1600);
        assertThat(events).containsExactly("b first-byte");
    }

    @Test
    void aRelayedResponseSilentForLongerThanTheIdleTimeoutIsCutAtTheNextSecondlyCheck() {
        at(0); // the idle check runs now, then once a second
        Timeouts.Watch live = watch("live");
        Timeouts.Watch silent = watch("silent");
        live.relaying();
        silent.relaying();

        for (long ms = 100; ms <= 1000; ms += 100) {
            at(ms);
            live.touch();
        }
        assertThat(events).containsExactly("silent idle");
        at(1900);
        assertThat(events).containsExactly("silent idle");
        at(2000); // no chunk since 1000 now for either (a real exchange is cut and stops being watched)
        assertThat(events).containsExactly("silent idle", "live idle", "silent idle");
    }

    @Test
    void aFinishedResponseIsNoLongerWatchedAndDoneIsIdempotent() {
        at(0);
        Timeouts.Watch a = watch("a");
        Timeouts.Watch b = watch("b");
        Timeouts.Watch c = watch("c");
        a.relaying();
        b.relaying();
        c.relaying();
        b.done();
        b.done();
        a.done();

        at(1000);
        assertThat(events).containsExactly("c idle");
        c.done();
        at(2000);
        assertThat(events).containsExactly("c idle");
    }

    @Test
    void theCoarseClockIsTheLastSweepsTime() {
        assertThat(timeouts.nowMs()).isEqualTo(5000);
        nanos.addAndGet(250_000_000);
        assertThat(timeouts.nowMs()).isEqualTo(5000);
        timeouts.sweep();
        assertThat(timeouts.nowMs()).isEqualTo(5250);
    }
}
