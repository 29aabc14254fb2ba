package io.heartgate.scheduler.admission;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FairQueueTest {

    private static List<String> drain(FairQueue<String> q) {
        List<String> order = new ArrayList<>();
        for (FairQueue.Ticket<String> t = q.poll(); t != null; t = q.poll()) {
            order.add(t.item());
        }
        return order;
    }

    @Test
    void oneCallerIsServedOldestFirst() {
        FairQueue<String> q = new FairQueue<>(10);
        q.offer("a1", "a", 0, 1);
        q.offer("a2", "a", 0, 2);
        q.offer("a3", "a", 0, 3);
        assertThat(q.peek().item()).isEqualTo("a1");
        assertThat(drain(q)).containsExactly("a1", "a2", "a3");
        assertThat(q.isEmpty()).isTrue();
    }

    @Test
    void callersTakeTurnsSoAFloodWaitsBehindItself() {
        FairQueue<String> q = new FairQueue<>(100);
        for (int i = 1; i <= 5; i++) {
            q.offer("heavy" + i, "heavy", 0, i);
        }
        q.offer("light1", "light", 0, 10);
        q.offer("light2", "light", 0, 11);
        assertThat(drain(q)).containsExactly("heavy1", "light1", "heavy2", "light2", "heavy3", "heavy4", "heavy5");
    }

    @Test
    void aCallerThatHadNothingWaitingJoinsTheRoundInProgress() {
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("a1", "a", 0, 1);
        q.offer("b1", "b", 0, 2);
        q.offer("a2", "a", 0, 3);
        assertThat(q.poll().item()).isEqualTo("a1");
        q.offer("c1", "c", 0, 4); // c has not been served this round; a has
        assertThat(drain(q)).containsExactly("b1", "c1", "a2");
    }

    @Test
    void aLightCallerIsServedAtTheNextFreeSlotWhileAFloodWaits() {
        FairQueue<String> q = new FairQueue<>(1000);
        for (int i = 1; i <= 50; i++) {
            q.offer("heavy" + i, "heavy", 0, i);
        }
        assertThat(q.poll().item()).isEqualTo("heavy1");
        assertThat(q.poll().item()).isEqualTo("heavy2");
        q.offer("light1", "light", 0, 100);
        assertThat(q.poll().item()).isEqualTo("light1");
        assertThat(q.poll().item()).isEqualTo("heavy3");
        q.offer("light2", "light", 0, 101);
        assertThat(q.poll().item()).isEqualTo("light2");
    }

    @Test
    void aCallerComingBackRightAfterItsTurnWaitsForTheNextRound() {
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("b1", "b", 0, 1);
        q.offer("b2", "b", 0, 2);
        q.offer("a1", "a", 0, 3);
        assertThat(q.poll().item()).isEqualTo("b1");
        assertThat(q.poll().item()).isEqualTo("a1");
        q.offer("a2", "a", 0, 4); // a was served in this round: it waits behind b2
        q.offer("c1", "c", 0, 5);
        assertThat(drain(q)).containsExactly("c1", "b2", "a2");
    }

    @Test
    void aClosedLoopCallerGetsOneTurnARound() {
        // "loop" sends its next request as soon as one of its own is served, as a client in a
        // closed loop does; "flood" keeps 20 waiting. Neither may take two turns in a row.
        FairQueue<String> q = new FairQueue<>(100);
        for (int i = 0; i < 20; i++) {
            q.offer("flood", "flood", 0, i);
        }
        q.offer("loop", "loop", 0, 20);
        Map<String, Integer> served = new HashMap<>();
        String previous = null;
        for (int i = 0; i < 200; i++) {
            FairQueue.Ticket<String> t = q.poll();
            assertThat(t.item()).isNotEqualTo(previous);
            previous = t.item();
            served.merge(t.item(), 1, Integer::sum);
            q.offer(t.item(), t.item(), 0, 21 + i);
        }
        assertThat(served).containsEntry("flood", 100).containsEntry("loop", 100);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, FairQueue.BURST})
    void twoCallersWaitingThroughAnIntervalAreServedWithinTwoOfEachOtherInItPlusABurst(int burst) {
        // Start-time fair queuing's bound for equal costs: over any time both had requests waiting,
        // the counts served differ by at most two, and by at most the burst's extra requests more
        // (a caller has one burst a time it waits). Random arrivals, services and hang-ups; a plain
        // first-come queue breaks it within a few steps.
        Random random = new Random(7);
        for (int trial = 0; trial < 50; trial++) {
            FairQueue<String> q = new FairQueue<>(10_000, burst);
            List<FairQueue.Ticket<String>> live = new ArrayList<>();
            Map<String, Integer> waiting = new HashMap<>();
            Map<String, Integer> served = new HashMap<>();
            // for each pair of callers waiting, both counts when the later of the two began waiting
            Map<List<String>, int[]> since = new HashMap<>();
            for (int step = 0; step < 2_000; step++) {
                int op = random.nextInt(10);
                String changed = null;
                if (op < 5) {
                    String caller = "c" + random.nextInt(6);
                    live.add(q.offer(caller, caller, 0, step));
                    if (waiting.merge(caller, 1, Integer::sum) == 1) {
                        for (String other : waiting.keySet()) {
                            if (!other.equals(caller)) {
                                since.put(List.of(caller, other), new int[] {served.getOrDefault(caller, 0), served.getOrDefault(other, 0)});
                            }
                        }
                    }
                } else if (op < 9) {
                    FairQueue.Ticket<String> t = q.poll();
                    if (t != null) {
                        live.remove(t);
                        served.merge(t.caller(), 1, Integer::sum);
                        changed = t.caller();
                    }
                } else if (!live.isEmpty()) {
                    FairQueue.Ticket<String> t = live.remove(random.nextInt(live.size()));
                    assertThat(q.remove(t)).isTrue();
                    changed = t.caller();
                }
                if (changed != null && waiting.merge(changed, -1, Integer::sum) == 0) {
                    waiting.remove(changed);
                    String gone = changed;
                    since.keySet().removeIf(pair -> pair.contains(gone));
                }
                for (Map.Entry<List<String>, int[]> e : since.entrySet()) {
                    int a = served.getOrDefault(e.getKey().get(0), 0) - e.getValue()[0];
                    int b = served.getOrDefault(e.getKey().get(1), 0) - e.getValue()[1];
                    assertThat(Math.abs(a - b)).as("trial %d step %d %s", trial, step, e.getKey()).isLessThanOrEqualTo(2 + burst - 1);
                }
                assertThat(q.size()).isEqualTo(live.size());
            }
        }
    }

    @Test
    void aCallerThatHadNothingWaitingHasUpToItsBurstServedInTheRoundItJoins() {
        FairQueue<String> q = new FairQueue<>(1000, FairQueue.BURST);
        for (int i = 1; i <= 20; i++) {
            q.offer("heavy" + i, "heavy", 0, i);
        }
        for (int i = 0; i < 8; i++) {
            q.poll(); // the flood's burst when it began, then one a round
        }
        for (int i = 1; i <= 5; i++) {
            q.offer("light" + i, "light", 0, 100 + i); // five parallel calls
        }
        List<String> next = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            next.add(q.poll().item());
        }
        assertThat(next).containsExactly("light1", "light2", "light3", "light4", "heavy9", "light5", "heavy10", "heavy11");
    }

    @Test
    void callersBurstingInOneRoundTakeTurnsInIt() {
        FairQueue<String> q = new FairQueue<>(100, 4);
        for (int i = 1; i <= 3; i++) {
            q.offer("a" + i, "a", 0, i);
        }
        for (int i = 1; i <= 3; i++) {
            q.offer("b" + i, "b", 0, 10 + i);
        }
        assertThat(drain(q)).containsExactly("a1", "b1", "a2", "b2", "a3", "b3");
    }

    @Test
    void aHigherPriorityClassIsAlwaysServedFirst() {
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("low1", "low", 0, 1);
        q.offer("low2", "low", 0, 2);
        q.offer("high1", "high", 5, 3);
        q.offer("mid1", "mid", 1, 4);
        q.offer("high2", "high", 5, 5);
        q.offer("neg", "neg", -1, 0);
        assertThat(drain(q)).containsExactly("high1", "high2", "mid1", "low1", "low2", "neg");
    }

    @Test
    void aFullQueueRefusesTheNextRequest() {
        FairQueue<String> q = new FairQueue<>(2);
        assertThat(q.offer("1", "a", 0, 1)).isNotNull();
        assertThat(q.offer("2", "b", 0, 2)).isNotNull();
        assertThat(q.offer("3", "c", 9, 3)).isNull();
        assertThat(q.size()).isEqualTo(2);
        assertThat(new FairQueue<String>(0).offer("x", "a", 0, 0)).isNull();
    }

    @Test
    void aFullQueueGivesWayByDroppingTheNewestOfTheCallerWithTheMostWaiting() {
        FairQueue<String> q = new FairQueue<>(5);
        assertThat(q.giveWayTo("a", 0)).isNull();
        q.offer("a1", "a", 0, 1);
        q.offer("a2", "a", 0, 2);
        q.offer("a3", "a", 0, 3);
        q.offer("b1", "b", 0, 4);
        q.offer("b2", "b", 0, 5);
        assertThat(q.full()).isTrue();
        assertThat(q.giveWayTo("a", 0)).isNull(); // its own backlog is the longest
        assertThat(q.giveWayTo("b", 0)).isNull(); // 3 against 2: it would end up level, not below
        assertThat(q.giveWayTo("c", 0).item()).isEqualTo("a3");
        assertThat(q.giveWayTo("c", -1)).isNull(); // a lower class than any waiting
        assertThat(q.giveWayTo("b", 1).item()).isEqualTo("a3"); // a higher class: from the lowest
        q.remove(q.giveWayTo("c", 0));
        q.offer("c1", "c", 0, 6);
        assertThat(drain(q)).containsExactly("a1", "b1", "c1", "a2", "b2");
    }

    @Test
    void ofCallersEquallyLongTheOneWhoseNewestCameLastGivesWay() {
        FairQueue<String> q = new FairQueue<>(4);
        q.offer("a1", "a", 0, 1);
        q.offer("b1", "b", 0, 2);
        q.offer("b2", "b", 0, 3);
        q.offer("a2", "a", 0, 4);
        assertThat(q.giveWayTo("c", 0).item()).isEqualTo("a2");
    }

    @Test
    void aRequestTakenFromTheMiddleMovesThoseBehindItUpARound() {
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("a1", "a", 0, 1);
        FairQueue.Ticket<String> a2 = q.offer("a2", "a", 0, 2);
        q.offer("a3", "a", 0, 3);
        q.offer("b1", "b", 0, 4);
        q.offer("b2", "b", 0, 5);
        q.offer("b3", "b", 0, 6);
        q.remove(a2);
        assertThat(drain(q)).containsExactly("a1", "b1", "a3", "b2", "b3");
    }

    @Test
    void aRequestTakenAheadOfItsTurnCostsItsCallerItsTurn() {
        // b3 is served out of turn (a retry that could use a slot its elders could not): that is b's
        // turn in this round, so a caller that joins now goes before b's next, as after a turn.
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("a1", "a", 0, 1);
        q.offer("a2", "a", 0, 2);
        q.offer("b1", "b", 0, 3);
        q.offer("b2", "b", 0, 4);
        FairQueue.Ticket<String> b3 = q.offer("b3", "b", 0, 5);
        q.take(b3);
        assertThat(b3.queued()).isFalse();
        q.offer("c1", "c", 0, 6);
        assertThat(drain(q)).containsExactly("a1", "c1", "b1", "a2", "b2");
    }

    @Test
    void aTurnTakenAheadOfALaterRoundIsThatRoundsTurn() {
        // b was served in round 0; its only request left, due in round 1, is served out of turn. That
        // was b's turn of round 1, so b's next request waits for round 2, behind a's.
        FairQueue<String> q = new FairQueue<>(100);
        for (String c : List.of("a", "c")) {
            for (int i = 1; i <= 3; i++) {
                q.offer(c + i, c, 0, i);
            }
        }
        q.offer("b1", "b", 0, 7);
        FairQueue.Ticket<String> b2 = q.offer("b2", "b", 0, 8);
        assertThat(List.of(q.poll().item(), q.poll().item(), q.poll().item())).containsExactly("a1", "c1", "b1");
        q.take(b2);
        assertThat(q.poll().item()).isEqualTo("a2");
        FairQueue.Ticket<String> b3 = q.offer("b3", "b", 0, 9);
        q.remove(b3); // its client hangs up: b's next still waits for round 2
        q.offer("b4", "b", 0, 10);
        assertThat(drain(q)).containsExactly("c2", "a3", "b4", "c3");
    }

    @Test
    void aTurnTakenAheadStaysTakenWhenTheCallersOtherRequestsLeave() {
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("a1", "a", 0, 1);
        q.offer("a2", "a", 0, 2);
        FairQueue.Ticket<String> b1 = q.offer("b1", "b", 0, 3);
        FairQueue.Ticket<String> b2 = q.offer("b2", "b", 0, 4);
        q.take(b1); // b's turn of this round
        q.remove(b2); // its client hangs up
        q.offer("b3", "b", 0, 5);
        q.offer("c1", "c", 0, 6);
        assertThat(drain(q)).containsExactly("a1", "c1", "b3", "a2");
    }

    @Test
    void aCallerWhoseOnlyRequestWasTakenAheadOfItsTurnComesBackInTheNextRound() {
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("a1", "a", 0, 1);
        q.offer("a2", "a", 0, 2);
        FairQueue.Ticket<String> b1 = q.offer("b1", "b", 0, 3);
        q.take(b1);
        q.offer("b2", "b", 0, 4); // b was served in this round
        q.offer("c1", "c", 0, 5);
        assertThat(drain(q)).containsExactly("a1", "c1", "b2", "a2");
    }

    @Test
    void aHungUpRequestLeavesAtOnceAndItsCallerLosesNoTurn() {
        FairQueue<String> q = new FairQueue<>(100);
        FairQueue.Ticket<String> a1 = q.offer("a1", "a", 0, 1);
        q.offer("b1", "b", 0, 2);
        FairQueue.Ticket<String> a2 = q.offer("a2", "a", 0, 3);
        assertThat(q.remove(a1)).isTrue();
        assertThat(q.remove(a1)).isFalse();
        assertThat(a1.queued()).isFalse();
        assertThat(q.size()).isEqualTo(2);
        assertThat(drain(q)).containsExactly("a2", "b1");
        assertThat(q.remove(a2)).isFalse();
    }

    @Test
    void aTicketIsRemovedOnlyFromItsOwnQueue() {
        FairQueue<String> one = new FairQueue<>(10);
        FairQueue<String> two = new FairQueue<>(10);
        FairQueue.Ticket<String> t = one.offer("x", "a", 0, 1);
        two.offer("y", "a", 0, 1);
        assertThat(two.remove(t)).isFalse();
        assertThat(two.size()).isEqualTo(1);
        assertThat(one.remove(t)).isTrue();
    }

    @Test
    void removingACallersLastRequestDropsItsTurn() {
        FairQueue<String> q = new FairQueue<>(100);
        FairQueue.Ticket<String> a1 = q.offer("a1", "a", 0, 1);
        FairQueue.Ticket<String> h = q.offer("h", "h", 3, 1);
        q.offer("b1", "b", 0, 2);
        q.remove(a1);
        q.remove(h);
        assertThat(drain(q)).containsExactly("b1");
    }

    @Test
    void theWaitLimitExpiresTheOldestOnlyAtItsBoundary() {
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("a1", "a", 0, 100);
        q.offer("b1", "b", 9, 150);
        q.offer("a2", "a", 0, 200);
        List<String> expired = new ArrayList<>();
        q.expire(1099, 1000, t -> expired.add(t.item()));
        assertThat(expired).isEmpty();
        q.expire(1100, 1000, t -> expired.add(t.item()));
        assertThat(expired).containsExactly("a1");
        q.expire(1200, 1000, t -> expired.add(t.item()));
        assertThat(expired).containsExactly("a1", "b1", "a2");
        assertThat(q.isEmpty()).isTrue();
        assertThat(q.peek()).isNull();
        assertThat(q.oldestNanos()).isEqualTo(Long.MAX_VALUE);
    }
}
