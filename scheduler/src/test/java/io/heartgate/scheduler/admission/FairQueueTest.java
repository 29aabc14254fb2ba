package io.heartgate.scheduler.admission;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

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
    void aCallerNewToTheClassTakesTheLastTurn() {
        FairQueue<String> q = new FairQueue<>(100);
        q.offer("a1", "a", 0, 1);
        q.offer("b1", "b", 0, 2);
        q.offer("a2", "a", 0, 3);
        assertThat(q.poll().item()).isEqualTo("a1");
        q.offer("c1", "c", 0, 4);
        assertThat(drain(q)).containsExactly("b1", "a2", "c1");
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
