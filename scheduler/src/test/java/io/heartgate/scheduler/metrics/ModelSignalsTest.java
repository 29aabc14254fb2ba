package io.heartgate.scheduler.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.admission.ModelWait;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Each model's saturation from plain snapshots and queue states: the autoscaling signal. */
class ModelSignalsTest {

    private static Node node(String id, Integer capacity, int ownInFlight, List<String> models) {
        InFlight inFlight = new InFlight();
        for (int i = 0; i < ownInFlight; i++) {
            inFlight.increment();
        }
        return Node.of(Heartbeat.builder(id, "http://10.0.0.1:8000").state(NodeState.UP).models(models).capacity(capacity)
                .load(new Load(null, null, null, null, null)).build(), Instant.EPOCH, inFlight);
    }

    @Test
    void requestsOnAModelsNodesAndInItsQueueOverTheirCapacity() {
        TableSnapshot snapshot = new TableSnapshot(1, List.of(
                node("a", 4, 3, List.of("llama3:8b")),
                node("b", 4, 4, List.of("llama3:8b", "qwen2.5:7b")),
                node("c", null, 5, List.of("qwen2.5:7b")))); // capacity unknown

        Map<String, ModelSignals.Signal> signals = ModelSignals.of(snapshot,
                Map.of("llama3:8b", new ModelWait(2, 1_500_000_000L)));

        ModelSignals.Signal llama = signals.get("llama3:8b");
        assertThat(llama.inFlight()).isEqualTo(7);
        assertThat(llama.capacity()).isEqualTo(8);
        assertThat(llama.queued()).isEqualTo(2);
        assertThat(llama.queueWaitSeconds()).isEqualTo(1.5);
        assertThat(llama.saturation()).as("(3 + 4 + 2 queued) / 8").isEqualTo(9 / 8.0);
        ModelSignals.Signal qwen = signals.get("qwen2.5:7b");
        assertThat(qwen.inFlight()).as("the node of unknown capacity counts here").isEqualTo(9);
        assertThat(qwen.saturation()).as("but only b's 4 of 4 in the ratio").isEqualTo(1.0);
    }

    @Test
    void aModelWhoseNodesReportNoCapacityHasNoSaturationAndAQueuedModelWithoutNodesIsListed() {
        TableSnapshot snapshot = new TableSnapshot(1, List.of(node("c", null, 1, List.of("phi3"))));
        Map<String, ModelSignals.Signal> signals = ModelSignals.of(snapshot, Map.of("mistral", new ModelWait(3, 0)));
        assertThat(signals.get(ModelNames.normalize("phi3")).saturation()).isNaN();
        assertThat(signals.get("mistral").queued()).as("queued under the name it was asked by").isEqualTo(3);
    }

    @Test
    void theGaugesFollowTheLastRefreshAndDropModelsGone() {
        AtomicReference<TableSnapshot> table = new AtomicReference<>(new TableSnapshot(1, List.of(
                node("a", 2, 1, List.of("llama3:8b")))));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ModelSignals signals = new ModelSignals(table::get, Map::of);
        signals.bindTo(registry);
        assertThat(registry.get("heartgate_model_saturation").tag("model", "llama3:8b").gauge().value()).isEqualTo(0.5);
        table.set(new TableSnapshot(2, List.of(node("b", 4, 4, List.of("qwen2.5:7b")))));
        signals.refresh();
        assertThat(registry.get("heartgate_model_saturation").tag("model", "qwen2.5:7b").gauge().value()).isEqualTo(1.0);
        assertThat(registry.find("heartgate_model_saturation").tag("model", "llama3:8b").gauge()).isNull();
        assertThat(registry.get("heartgate_model_queue_depth").tag("model", "qwen2.5:7b").gauge().value()).isZero();
    }
}
