package io.heartgate.protocol;

import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * Represents one version-1 heartbeat: what one inference node says about itself at one moment.
 *
 * <p>Instances are immutable and hold only valid values: the codec builds them after validation,
 * and the compact constructor re-checks the rules so code that builds heartbeats by hand (the agent,
 * tests) cannot publish one that a scheduler would reject. Optional fields are {@code null} when
 * absent, except {@code models}, {@code gpus}, {@code modelInfo} and {@code loaded}, which are empty
 * lists, and {@code load}, which is {@link Load#UNKNOWN}.
 *
 * @param nodeId the node's unique id, 1 to 128 of {@code A-Za-z0-9._:-}
 * @param instance random per agent start, or {@code null}
 * @param seq increases within one instance, or {@code null}
 * @param url the inference server's base URL as the scheduler must reach it
 * @param state what the agent's last probe found
 * @param weight relative capacity, 1 to 1000
 * @param intervalMs how often the agent sends heartbeats, 100 to 60000 ms
 * @param sentAt the agent's clock when it sent this, or {@code null}; never used for liveness (a scheduler that
 *     checks signatures uses it to unmask replays)
 * @param backend the server kind (ollama, vllm, ...), or {@code null}
 * @param models the models it serves; empty means any model
 * @param load reported load; {@link Load#UNKNOWN} when none
 * @param gpus GPU figures; empty when unknown
 * @param modelInfo what the node says of each model it serves (Ollama's {@code /api/tags}); empty when it says nothing
 * @param loaded the models it holds in memory now (Ollama's {@code /api/ps}); empty when unknown or none
 * @param capacity how many requests the server generates at once (its slots), 1 to 100000, or
 *     {@code null} when unknown
 */
public record Heartbeat(
        String nodeId,
        String instance,
        Long seq,
        String url,
        NodeState state,
        int weight,
        int intervalMs,
        Instant sentAt,
        String backend,
        List<String> models,
        Load load,
        List<Gpu> gpus,
        List<ModelInfo> modelInfo,
        List<LoadedModel> loaded,
        Integer capacity) {

    /** The version this code writes. */
    public static final int VERSION = 1;

    /** Validates every field against the version-1 rules and copies the lists. */
    public Heartbeat {
        models = List.copyOf(Objects.requireNonNullElse(models, List.of()));
        gpus = List.copyOf(Objects.requireNonNullElse(gpus, List.of()));
        modelInfo = List.copyOf(Objects.requireNonNullElse(modelInfo, List.of()));
        loaded = List.copyOf(Objects.requireNonNullElse(loaded, List.of()));
        load = Objects.requireNonNullElse(load, Load.UNKNOWN);
        HeartbeatRules.check(nodeId, instance, seq, url, state, weight, intervalMs, backend, models, load, gpus)
                .ifPresent(rejection -> {
                    throw new IllegalArgumentException(rejection.toString());
                });
        HeartbeatRules.checkCatalogue(modelInfo, loaded).or(() -> HeartbeatRules.checkCapacity(capacity))
                .ifPresent(rejection -> {
                    throw new IllegalArgumentException(rejection.toString());
                });
    }

    /** Returns a builder for a heartbeat with the two fields that have no default. */
    public static Builder builder(String nodeId, String url) {
        return new Builder(nodeId, url);
    }

    /** Returns a builder that starts from this heartbeat's values. */
    public Builder toBuilder() {
        return new Builder(nodeId, url)
                .instance(instance)
                .seq(seq)
                .state(state)
                .weight(weight)
                .intervalMs(intervalMs)
                .sentAt(sentAt)
                .backend(backend)
                .models(models)
                .load(load)
                .gpus(gpus)
                .modelInfo(modelInfo)
                .loaded(loaded)
                .capacity(capacity);
    }

    /** Returns whether the node serves the given model; a node that lists no model serves any. */
    public boolean serves(String model) {
        return models.isEmpty() || models.contains(model);
    }

    /** Collects heartbeat fields; not thread-safe. Defaults: state UP, weight 1, interval 1 s. */
    public static final class Builder {
        private final String nodeId;
        private final String url;
        private String instance;
        private Long seq;
        private NodeState state = NodeState.UP;
        private int weight = 1;
        private int intervalMs = 1000;
        private Instant sentAt;
        private String backend;
        private List<String> models = List.of();
        private Load load = Load.UNKNOWN;
        private List<Gpu> gpus = List.of();
        private List<ModelInfo> modelInfo = List.of();
        private List<LoadedModel> loaded = List.of();
        private Integer capacity;

        private Builder(String nodeId, String url) {
            this.nodeId = nodeId;
            this.url = url;
        }

        public Builder instance(String value) {
            this.instance = value;
            return this;
        }

        public Builder seq(Long value) {
            this.seq = value;
            return this;
        }

        public Builder state(NodeState value) {
            this.state = value;
            return this;
        }

        public Builder weight(int value) {
            this.weight = value;
            return this;
        }

        public Builder intervalMs(int value) {
            this.intervalMs = value;
            return this;
        }

        public Builder sentAt(Instant value) {
            this.sentAt = value;
            return this;
        }

        public Builder backend(String value) {
            this.backend = value;
            return this;
        }

        public Builder models(List<String> value) {
            this.models = value;
            return this;
        }

        public Builder load(Load value) {
            this.load = value;
            return this;
        }

        public Builder gpus(List<Gpu> value) {
            this.gpus = value;
            return this;
        }

        public Builder modelInfo(List<ModelInfo> value) {
            this.modelInfo = value;
            return this;
        }

        public Builder loaded(List<LoadedModel> value) {
            this.loaded = value;
            return this;
        }

        public Builder capacity(Integer value) {
            this.capacity = value;
            return this;
        }

        /** Builds the heartbeat; throws {@link IllegalArgumentException} naming the broken rule. */
        public Heartbeat build() {
            return new Heartbeat(nodeId, instance, seq, url, state, weight, intervalMs, sentAt, backend,
                    models, load, gpus, modelInfo, loaded, capacity);
        }
    }
}
