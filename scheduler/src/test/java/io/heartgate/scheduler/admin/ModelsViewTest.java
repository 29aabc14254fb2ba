package io.heartgate.scheduler.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.metrics.ModelSignals;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** /admin/models from plain snapshots: who serves, who routes, who has it loaded, and digests that differ. */
class ModelsViewTest {

    private static Node node(String id, NodeState state, List<String> models, List<ModelInfo> info,
                             List<LoadedModel> loaded) {
        return Node.of(Heartbeat.builder(id, "http://10.0.0.1:11434").state(state).models(models).modelInfo(info)
                .loaded(loaded).build(), Instant.EPOCH, new InFlight());
    }

    private static ModelInfo digest(String name, String digest) {
        return new ModelInfo(name, null, digest, null, null);
    }

    @Test
    void listsEachModelWithItsNodesLoadsAndDigests() {
        TableSnapshot snapshot = new TableSnapshot(1, List.of(
                node("a", NodeState.UP, List.of("llama3:8b", "qwen2.5:7b"), List.of(digest("llama3:8b", "d1")),
                        List.of(new LoadedModel("llama3:8b", null, null, null, null))),
                node("b", NodeState.UP, List.of("llama3:latest"), List.of(digest("llama3:latest", "d2")), List.of()),
                node("c", NodeState.DOWN, List.of("qwen2.5:7b"), List.of(), List.of())));

        JsonObject view = ModelsView.of(snapshot);

        JsonObject llama = view.getJsonArray("models").getJsonObject(0);
        assertThat(llama.getString("name")).isEqualTo("llama3:8b");
        assertThat(llama.getJsonArray("nodes").getList()).containsExactly("a");
        assertThat(llama.getJsonArray("loadedOn").getList()).containsExactly("a");
        JsonObject latest = view.getJsonArray("models").getJsonObject(1);
        assertThat(latest.getString("name")).isEqualTo("llama3:latest"); // another tag: another model
        JsonObject qwen = view.getJsonArray("models").getJsonObject(2);
        assertThat(qwen.getJsonArray("nodes").getList()).containsExactly("a", "c");
        assertThat(qwen.getJsonArray("routableOn").getList()).containsExactly("a");
        assertThat(qwen.getBoolean("digestsDiffer")).isFalse();
    }

    @Test
    void flagsAModelWhoseNodesDisagreeOnItsDigest() {
        TableSnapshot snapshot = new TableSnapshot(1, List.of(
                node("a", NodeState.UP, List.of("llama3:8b"), List.of(digest("llama3:8b", "d1")), List.of()),
                node("b", NodeState.UP, List.of("llama3:8b"), List.of(digest("llama3:8b", "d2")), List.of()),
                node("c", NodeState.UP, List.of("llama3:8b"), List.of(digest("llama3:8b", "d1")), List.of())));

        JsonObject llama = ModelsView.of(snapshot).getJsonArray("models").getJsonObject(0);

        assertThat(llama.getBoolean("digestsDiffer")).isTrue();
        assertThat(llama.getJsonObject("digests").getMap()).containsEntry("a", "d1").containsEntry("b", "d2");
    }

    @Test
    void showsEachModelsLoadAndQueueFromTheLastSignals() {
        TableSnapshot snapshot = new TableSnapshot(1, List.of(
                node("a", NodeState.UP, List.of("llama3:8b", "phi3"), List.of(), List.of())));
        JsonObject view = ModelsView.of(snapshot, Map.of("llama3:8b", new ModelSignals.Signal(3, 4, 2, 1.5, 1.25),
                ModelNames.normalize("phi3"), new ModelSignals.Signal(1, 0, 0, 0, Double.NaN)));
        JsonObject llama = view.getJsonArray("models").getJsonObject(0);
        assertThat(llama.getInteger("inFlight")).isEqualTo(3);
        assertThat(llama.getInteger("capacity")).isEqualTo(4);
        assertThat(llama.getInteger("queued")).isEqualTo(2);
        assertThat(llama.getDouble("queueWaitSeconds")).isEqualTo(1.5);
        assertThat(llama.getDouble("saturation")).isEqualTo(1.25);
        JsonObject phi = view.getJsonArray("models").getJsonObject(1);
        assertThat(phi.getInteger("inFlight")).isEqualTo(1);
        assertThat(phi.getValue("capacity")).isNull();
        assertThat(phi.getValue("saturation")).isNull();
    }
}
