package io.heartgate.sim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which models the simulated GPU holds in memory, the way Ollama's scheduler keeps them: loaded on
 * demand one at a time (taking {@code loadTime}), the least recently used model that no generation
 * is using evicted first when {@code maxLoadedModels} are in memory. Apart from {@link SimEngine} so
 * the engine is left with slots, the queue and tokens. Not thread-safe: the engine's thread makes
 * every call and runs every timer.
 */
final class ModelMemory {

    /** Told when a load ends: the model, and when its load began on the engine's clock. */
    interface Loaded {
        void loaded(String model, long loadStartNanos);
    }

    private static final Logger log = LoggerFactory.getLogger(ModelMemory.class);

    private final SimConfig config;
    private final LongSupplier nanos;
    private final Timers timers;
    private final SimStats stats;
    private final Loaded onLoaded;
    /** Models in memory, least recently used first, to the generations using each. */
    private final LinkedHashMap<String, Integer> loaded = new LinkedHashMap<>(16, 0.75f, true);
    private String loading;
    private long loadStartNanos;

    ModelMemory(SimConfig config, LongSupplier nanos, Timers timers, SimStats stats, Loaded onLoaded) {
        this.config = config;
        this.nanos = nanos;
        this.timers = timers;
        this.stats = stats;
        this.onLoaded = onLoaded;
        if (!config.loadsOnDemand()) {
            config.models().forEach(m -> loaded.put(m, 0));
        }
    }

    /** Returns the models in memory now, most recently used first. */
    List<String> loadedModels() {
        List<String> out = new ArrayList<>(loaded.keySet());
        Collections.reverse(out);
        return out;
    }

    /** Returns the model being loaded now, or {@code null}. */
    String loading() {
        return loading;
    }

    /**
     * Says whether {@code model} is in memory; when it is not and no other load is under way, begins
     * loading it, evicting the least recently used idle model when memory is full. Returns false while
     * the model still has to wait: for its load, another load, or a loaded model to fall idle.
     */
    boolean ready(String model) {
        if (loaded.containsKey(model)) {
            return true;
        }
        if (loading != null) {
            return false;
        }
        if (config.maxLoadedModels() > 0 && loaded.size() >= config.maxLoadedModels()) {
            String idle = null;
            for (Map.Entry<String, Integer> e : loaded.entrySet()) {
                if (e.getValue() == 0) {
                    idle = e.getKey();
                    break;
                }
            }
            if (idle == null) {
                return false; // every model in memory is generating; the next freed slot tries again
            }
            loaded.remove(idle);
            stats.modelEvictions.increment();
            log.debug("Node {} evicted model {} to load {}", config.name(), idle, model);
        }
        stats.modelLoads.increment();
        long loadMs = config.loadTime().toMillis();
        if (loadMs == 0) {
            loaded.put(model, 0);
            return true;
        }
        loading = model;
        loadStartNanos = nanos.getAsLong();
        log.debug("Node {} loading model {} ({} ms)", config.name(), model, loadMs);
        timers.schedule(loadMs, () -> {
            loading = null;
            loaded.put(model, 0);
            onLoaded.loaded(model, loadStartNanos);
        });
        return false;
    }

    /** A generation of {@code model} started ({@code +1}) or ended ({@code -1}): it is used, or falls idle. */
    void generating(String model, int change) {
        loaded.merge(model, change, Integer::sum);
    }
}
