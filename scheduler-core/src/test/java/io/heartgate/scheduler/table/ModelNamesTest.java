package io.heartgate.scheduler.table;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ModelNamesTest {

    @ParameterizedTest
    @CsvSource({
        "llama3, llama3:latest",
        "llama3:latest, llama3:latest",
        "llama3:8b, llama3:8b",
        "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M, hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
        "registry.local:5000/team/model, registry.local:5000/team/model:latest",
        "meta-llama/Llama-3.1-8B-Instruct, meta-llama/Llama-3.1-8B-Instruct:latest",
    })
    void normalisesAsOllamaDoes(String name, String normalised) {
        assertThat(ModelNames.normalize(name)).isEqualTo(normalised);
    }
}
