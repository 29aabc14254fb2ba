package io.heartgate.loadgen;

import io.heartgate.protocol.InvalidSettingException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.random.RandomGenerator;

/**
 * Holds the models a run asks for and their shares, such as {@code llama3:8b=70,mistral:7b=30}.
 * Weights are positive numbers in any unit and are normalised; a model without {@code =weight}
 * weighs 1. Immutable and thread-safe.
 */
public final class Mix {

    private final List<String> models;
    private final double[] cumulative;
    private final Map<String, Double> shares;

    private Mix(List<String> models, double[] weights) {
        this.models = List.copyOf(models);
        double total = 0;
        for (double w : weights) {
            total += w;
        }
        this.cumulative = new double[weights.length];
        Map<String, Double> s = new LinkedHashMap<>();
        double running = 0;
        for (int i = 0; i < weights.length; i++) {
            running += weights[i];
            cumulative[i] = running / total;
            s.put(models.get(i), weights[i] / total);
        }
        this.shares = Collections.unmodifiableMap(s);
    }

    /**
     * Parses {@code name=weight,name=weight,...}.
     *
     * @throws InvalidSettingException for setting {@code mix} on an empty text, an empty name, a
     *     weight that is not a positive finite number, or a model named twice
     */
    public static Mix parse(String text) {
        if (text == null || text.isBlank()) {
            throw new InvalidSettingException("mix", "must name at least one model, such as llama3:8b=70,mistral:7b=30");
        }
        List<String> names = new ArrayList<>();
        List<Double> weights = new ArrayList<>();
        for (String part : text.split(",", -1)) {
            String entry = part.strip();
            int eq = entry.lastIndexOf('=');
            String name = (eq < 0 ? entry : entry.substring(0, eq)).strip();
            if (name.isEmpty()) {
                throw new InvalidSettingException("mix", "has an entry without a model name: '" + part + "' in '" + text + "'");
            }
            double weight = eq < 0 ? 1 : weight(entry.substring(eq + 1).strip(), name);
            if (names.contains(name)) {
                throw new InvalidSettingException("mix", "names " + name + " twice");
            }
            names.add(name);
            weights.add(weight);
        }
        return new Mix(names, weights.stream().mapToDouble(Double::doubleValue).toArray());
    }

    private static double weight(String text, String name) {
        double w;
        try {
            w = Double.parseDouble(text);
        } catch (NumberFormatException e) {
            throw new InvalidSettingException("mix", "weight of " + name + " must be a positive number, was '" + text + "'");
        }
        if (!(w > 0) || Double.isInfinite(w)) {
            throw new InvalidSettingException("mix", "weight of " + name + " must be a positive number, was '" + text + "'");
        }
        return w;
    }

    /** Returns the models in the order given; never empty. */
    public List<String> models() {
        return models;
    }

    /** Returns each model's normalised share (they sum to 1), in the order given. */
    public Map<String, Double> shares() {
        return shares;
    }

    /** Draws a model with one number from {@code random}; the same generator state gives the same model. */
    public String draw(RandomGenerator random) {
        double u = random.nextDouble();
        for (int i = 0; i < cumulative.length; i++) {
            if (u < cumulative[i]) {
                return models.get(i);
            }
        }
        return models.get(models.size() - 1); // rounding can leave the last sum a hair under 1
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        shares.forEach((m, s) -> b.append(b.isEmpty() ? "" : ",").append(m).append('=').append(s));
        return b.toString();
    }
}
