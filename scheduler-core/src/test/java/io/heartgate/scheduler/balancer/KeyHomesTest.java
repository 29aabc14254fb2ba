package io.heartgate.scheduler.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
}
