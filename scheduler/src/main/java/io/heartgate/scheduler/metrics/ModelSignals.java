package io.heartgate.scheduler.metrics;

import io.heartgate.scheduler.admission.ModelWait;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * Each model's saturation, the signal an autoscaler scales its inference servers on: the requests
 * its routable nodes hold (this replica's in flight and what their heartbeats report of others')
 * and those waiting for it in the gateway queue, over the capacity those nodes report. A node that
 * serves several models counts for each; nodes of unknown capacity count in {@code inFlight} but
 * not in the ratio, which is unknown ({@link Double#NaN}) when no node of the model reports one.
 * Computed from one table snapshot and the queue's state ({@link #of}, pure); the meters read the
 * figures of the last {@link #refresh}, run once a second.
 */
public final class ModelSignals {

    /**
     * One model's figures.
     *
     * @param inFlight requests on its routable nodes now
     * @param capacity the capacity its routable nodes of known capacity report, in all
     * @param queued its requests waiting in the gateway queue
     * @param queueWaitSeconds how long the longest of those has waited
     * @param saturation (requests on its nodes of known capacity + queued) / capacity; NaN when unknown
     */
    public record Signal(int inFlight, int capacity, int queued, double queueWaitSeconds, double saturation) {
    }

    private final Supplier<TableSnapshot> table;
    private final Supplier<Map<String, ModelWait>> queue;
    private volatile Map<String, Signal> current = Map.of();
    private MultiGauge saturation;
    private MultiGauge depth;
    private MultiGauge waited;

    /** Reads the table's snapshot and the queue's state at each {@link #refresh}. */
    public ModelSignals(Supplier<TableSnapshot> table, Supplier<Map<String, ModelWait>> queue) {
        this.table = table;
        this.queue = queue;
    }

    /** Returns each model's figures (by normalised name; {@code ""} for requests naming none), sorted. */
    public static Map<String, Signal> of(TableSnapshot snapshot, Map<String, ModelWait> queued) {
        Map<String, Signal> out = new TreeMap<>();
        Set<String> models = new HashSet<>();
        for (Node n : snapshot.routable()) {
            models.addAll(n.models()); // normalised already
        }
        models.addAll(queued.keySet());
        for (String model : models) {
            int inFlight = 0;
            int busy = 0;
            int capacity = 0;
            for (Node n : snapshot.candidates(model.isEmpty() ? null : model)) {
                inFlight += n.load();
                if (n.capacity() > 0) {
                    busy += n.load();
                    capacity += n.capacity();
                }
            }
            ModelWait w = queued.get(model);
            int waiting = w == null ? 0 : w.depth();
            double waitSeconds = w == null ? 0 : w.longestWaitNanos() / (double) TimeUnit.SECONDS.toNanos(1);
            out.put(model, new Signal(inFlight, capacity, waiting, waitSeconds,
                    capacity == 0 ? Double.NaN : (busy + waiting) / (double) capacity));
        }
        return out;
    }

    /** Computes the figures again from the table and the queue as they stand, and updates the meters. */
    public void refresh() {
        Map<String, Signal> now = of(table.get(), queue.get());
        current = now;
        if (saturation != null) {
            saturation.register(rows(now, Signal::saturation), true);
            depth.register(rows(now, s -> s.queued()), true);
            waited.register(rows(now, Signal::queueWaitSeconds), true);
        }
    }

    /** Returns the figures of the last {@link #refresh}. */
    public Map<String, Signal> current() {
        return current;
    }

    private static List<MultiGauge.Row<?>> rows(Map<String, Signal> signals,
                                                ToDoubleFunction<Signal> value) {
        List<MultiGauge.Row<?>> rows = new ArrayList<>(signals.size());
        signals.forEach((model, s) -> {
            double v = value.applyAsDouble(s);
            if (!Double.isNaN(v)) { // no capacity known: no figure, rather than NaN on the scrape
                rows.add(MultiGauge.Row.of(Tags.of("model", model.isEmpty() ? "none" : model), v));
            }
        });
        return rows;
    }

    /** Registers the per-model gauges: saturation, queue depth, the longest wait. */
    public void bindTo(MeterRegistry registry) {
        saturation = MultiGauge.builder("heartgate_model_saturation")
                .description("Requests on a model's nodes and waiting for it, over their reported capacity")
                .register(registry);
        depth = MultiGauge.builder("heartgate_model_queue_depth")
                .description("A model's requests waiting in the gateway queue").register(registry);
        waited = MultiGauge.builder("heartgate_model_queue_wait")
                .description("How long the longest of a model's waiting requests has waited").baseUnit("seconds")
                .register(registry);
        refresh();
    }
}
