package io.heartgate.scheduler.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The table of keys' homes: bounded, timed, and wrong only by forgetting. */
class KeyHomesTest {

    @Test
    void aHomeIsKeptUntilItsTimeToLivePasses() {
        KeyHomes homes = new KeyHomes(8, 1_000);
        homes.put(42L, "n1", 500, 0);
        assertThat(homes.get(42L, 999)).isEqualTo(new KeyHomes.Home(42L, "n1", 500, 0));
        assertThat(homes.get(42L, 1_000)).isNull();
        assertThat(homes.get(43L, 10)).as("another key").isNull();
    }

    @Test
    void manyMoreKeysThanSlotsHoldNoMoreThanTheSlots() {
        KeyHomes homes = new KeyHomes(4, Long.MAX_VALUE);
        for (long k = 0; k < 10_000; k++) {
            homes.put(k * 7919, "n" + k, k, 0);
        }
        int found = 0;
        for (long k = 0; k < 10_000; k++) {
            KeyHomes.Home h = homes.get(k * 7919, 1);
            if (h != null) {
                found++;
                assertThat(h.nodeId()).as("never another key's home").isEqualTo("n" + k);
            }
        }
        assertThat(found).isLessThanOrEqualTo(homes.capacity()).isPositive();
    }

    @Test
    void sizesOutsideTheRangeAreRefused() {
        assertThatThrownBy(() -> new KeyHomes(3, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new KeyHomes(8, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void twoKeysOfOneSetAreBothKeptAndAThirdPushesOutTheOlder() {
        KeyHomes homes = new KeyHomes(8, Long.MAX_VALUE);
        long a = 1;
        long b = 2;
        while ((homes.index(b) >> 1) != (homes.index(a) >> 1)) {
            b++;
        }
        long c = b + 1;
        while ((homes.index(c) >> 1) != (homes.index(a) >> 1)) {
            c++;
        }
        homes.put(a, "na", 1, 10);
        homes.put(b, "nb", 1, 20);
        assertThat(homes.get(a, 30).nodeId()).isEqualTo("na");
        assertThat(homes.get(b, 30).nodeId()).isEqualTo("nb");
        homes.put(a, "na2", 2, 40); // a again: its own slot, now the newer
        homes.put(c, "nc", 1, 50);
        assertThat(homes.get(b, 60)).as("the older of the two").isNull();
        assertThat(homes.get(a, 60).nodeId()).isEqualTo("na2");
        assertThat(homes.get(c, 60).nodeId()).isEqualTo("nc");
    }

    @Test
    void homesWorthSharingAreToldAndThoseLearntFromOthersAreNot() {
        KeyHomes homes = new KeyHomes(8, KeyHomes.DEFAULT_TTL.toNanos());
        List<String> told = new ArrayList<>();
        homes.share((key, node, bytes) -> told.add(key + "@" + node + ":" + bytes));
        homes.put(42L, "n1", 100, 0);
        homes.put(42L, "n1", 200, 1_000); // the same home, a longer conversation: nothing new to tell
        homes.put(42L, "n2", 300, 2_000); // moved
        long later = KeyHomes.SHARE_AGAIN.toNanos();
        homes.put(42L, "n2", 400, later); // ten minutes on the ticker passed: told again, so others' copies live on
        homes.put(42L, "n2", 450, later + 1_000); // within the same ten minutes: not again
        assertThat(told).containsExactly("42@n1:100", "42@n2:300", "42@n2:400");

        long now = later + 5_000_000;
        homes.adopt(7L, "n3", 50, now, 1_000_000); // another replica placed it a millisecond ago
        assertThat(homes.get(7L, now)).extracting(KeyHomes.Home::nodeId, KeyHomes.Home::bytes).containsExactly("n3", 50L);
        assertThat(told).hasSize(3);
        homes.put(7L, "n3", 60, now + 1); // learnt just now: nothing to tell back
        assertThat(told).hasSize(3);
        homes.adopt(8L, "n3", 50, later, KeyHomes.DEFAULT_TTL.toNanos()); // placed an hour ago: gone already
        assertThat(homes.get(8L, later)).isNull();
    }
}
