package io.heartgate.loadgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.heartgate.protocol.InvalidSettingException;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MixTest {

    @Test
    void normalisesWeightsInTheOrderGiven() {
        Mix mix = Mix.parse("llama3:8b=70, mistral:7b=10,qwen2.5:7b=10 ,phi3:mini=10");

        assertThat(mix.models()).containsExactly("llama3:8b", "mistral:7b", "qwen2.5:7b", "phi3:mini");
        assertThat(mix.shares()).containsExactly(Map.entry("llama3:8b", 0.7), Map.entry("mistral:7b", 0.1),
                Map.entry("qwen2.5:7b", 0.1), Map.entry("phi3:mini", 0.1));
    }

    @Test
    void weighsAModelWithoutAWeightOne() {
        assertThat(Mix.parse("llama3:8b").shares()).containsExactly(Map.entry("llama3:8b", 1.0));
        assertThat(Mix.parse("a,b=3").shares()).containsExactly(Map.entry("a", 0.25), Map.entry("b", 0.75));
        assertThat(Mix.parse("a=0.5,b=1.5").shares()).containsExactly(Map.entry("a", 0.25), Map.entry("b", 0.75));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "a=0", "a=-1", "a=x", "=5", "a=1,,b=2", "a=1,a=2", "a=NaN", "a=Infinity", "a=1,"})
    void refusesBadMixesNamingTheSetting(String text) {
        assertThatThrownBy(() -> Mix.parse(text))
                .isInstanceOfSatisfying(InvalidSettingException.class, e -> assertThat(e.setting()).isEqualTo("mix"));
    }

    @Test
    void saysWhatIsWrong() {
        assertThatThrownBy(() -> Mix.parse("a=70,b=zero")).hasMessage("mix weight of b must be a positive number, was 'zero'");
        assertThatThrownBy(() -> Mix.parse("a,a")).hasMessage("mix names a twice");
    }

    @Test
    void drawsModelsInProportionToTheirWeights() {
        Mix mix = Mix.parse("llama3:8b=70,mistral:7b=10,qwen2.5:7b=10,phi3:mini=10");
        SplittableRandom random = new SplittableRandom(1);
        Map<String, Integer> counts = new HashMap<>();
        int n = 100_000;
        for (int i = 0; i < n; i++) {
            counts.merge(mix.draw(random), 1, Integer::sum);
        }

        assertThat(counts.get("llama3:8b") / (double) n).isCloseTo(0.7, within(0.01));
        assertThat(counts.get("mistral:7b") / (double) n).isCloseTo(0.1, within(0.01));
        assertThat(counts.get("qwen2.5:7b") / (double) n).isCloseTo(0.1, within(0.01));
        assertThat(counts.get("phi3:mini") / (double) n).isCloseTo(0.1, within(0.01));
    }

    @Test
    void drawsTheSameModelsForTheSameSeed() {
        Mix mix = Mix.parse("a=1,b=1,c=1");
        SplittableRandom r1 = new SplittableRandom(9);
        SplittableRandom r2 = new SplittableRandom(9);
        for (int i = 0; i < 100; i++) {
            assertThat(mix.draw(r1)).isEqualTo(mix.draw(r2));
        }
    }
}
