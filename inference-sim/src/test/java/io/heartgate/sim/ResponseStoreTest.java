package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.sim.ResponseStore.Stored;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

class ResponseStoreTest {

    @Test
    void keepsTheMostRecentlyStoredOrLookedUpAndDropsTheRest() {
        ResponseStore store = new ResponseStore(2);
        store.put("resp_a", stored("a"));
        store.put("resp_b", stored("b"));
        assertThat(store.get("resp_a")).isPresent(); // a is now the most recently used
        store.put("resp_c", stored("c"));

        assertThat(store.get("resp_b")).as("least recently used, dropped").isEmpty();
        assertThat(store.get("resp_a").map(s -> s.response().getString("id"))).hasValue("a");
        assertThat(store.get("resp_c")).isPresent();
        assertThat(store.size()).isEqualTo(2);
    }

    @Test
    void anIdItNeverStoredIsNotThereWhateverItsPrefix() {
        ResponseStore store = new ResponseStore();
        store.put("resp_a", stored("a"));
        assertThat(store.get("resp_b")).isEmpty();
        assertThat(store.get("a")).isEmpty();
    }

    @Test
    void holdsTenThousandByDefaultAndAtLeastOne() {
        assertThat(ResponseStore.CAPACITY).isEqualTo(10_000);
        assertThatThrownBy(() -> new ResponseStore(0)).isInstanceOf(IllegalArgumentException.class);
    }

    private static Stored stored(String id) {
        return new Stored(new JsonObject().put("id", id), new JsonArray());
    }
}
