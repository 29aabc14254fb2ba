package io.heartgate.agent.probe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.heartgate.agent.Samples;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import java.util.List;
import org.junit.jupiter.api.Test;

class PayloadsTest {

    @Test
    void readsEveryModelOfOllamaTags() {
        assertThat(Payloads.ollamaModels(Samples.read("ollama-api-tags.json")))
                .hasSize(7)
                .contains("smollm2:1.7b", "mistral:7b", "granite3.3:2b")
                .anyMatch(m -> m.startsWith("hf.co/"));
    }

    @Test
    void readsLoadedModelsOfOllamaPs() {
        assertThat(Payloads.ollamaModels(Samples.read("ollama-api-ps.json")))
                .containsExactly("granite3.3:2b", "smollm2:1.7b");
        assertThat(Payloads.ollamaModels(Samples.read("ollama-api-ps-partial-offload.json")))
                .containsExactly("mistral:7b");
        assertThat(Payloads.isOllamaVersion(Samples.read("ollama-api-version.json"))).isTrue();
    }

    @Test
    void readsWhatOllamaTagsSaysOfEachModel() {
        List<ModelInfo> info = Payloads.ollamaModelInfo(Samples.read("ollama-api-tags.json"));
        assertThat(info).hasSize(7);
        assertThat(info.get(0)).isEqualTo(new ModelInfo("smollm2:1.7b", 1820428533L,
                "cef4a1e09247f018ca0c482ad4c2ce1474aba5e87f245dacf97f07948d05d8b4", "2025-08-03T21:20:02.9178974+02:00",
                new ModelInfo.Details("", "gguf", "llama", List.of("llama"), "1.7B", "Q8_0")));
        assertThat(info).extracting(ModelInfo::name).containsExactlyElementsOf(
                Payloads.ollamaModels(Samples.read("ollama-api-tags.json")));
    }

    /**
     * The templates Ollama ships and tests (see samples/SOURCES.md, ollama/ollama at v0.33.0-rc2): a
     * {@code .Messages} template continues a final assistant message only when it leaves out the end
     * of turn with {@code not $last}.
     */
    @Test
    void aMessagesTemplateContinuesAFinalAssistantMessageOnlyWhenItSkipsTheEndOfTheLastTurn() {
        assertThat(OllamaShow.prefill(Samples.read("ollama-template-qwen3-thinking-test.gotmpl"), null)).isTrue();

        assertThat(OllamaShow.prefill(Samples.read("ollama-template-chatml.gotmpl"), null)).isFalse();
        assertThat(OllamaShow.prefill(Samples.read("ollama-template-gemma3-instruct.gotmpl"), null))
                .as("$last only opens the model's turn").isFalse();
        assertThat(OllamaShow.prefill(Samples.read("ollama-template-llama3-instruct.gotmpl"), null)).isFalse();
        assertThat(OllamaShow.prefill(Samples.read("ollama-template-mistral-instruct.gotmpl"), null)).isFalse();
        assertThat(OllamaShow.prefill(Samples.read("ollama-template-alpaca.gotmpl"), null)).isFalse();
    }

    /** Ollama renders a template with both {@code .Messages} and {@code .Response} as a messages one. */
    @Test
    void aTemplateWithMessagesAndResponseIsReadAsAMessagesTemplate() {
        // TestParse's "ChatMLLike" in ollama's template/template_test.go.
        String chatMlLike = """
                {{- if .Messages }}
                {{- range .Messages }}<|im_start|>{{ .Role }}
                {{ .Content }}<|im_end|>
                {{ end }}<|im_start|>assistant
                {{ else -}}
                {{ if .System }}<|im_start|>system
                {{ .System }}<|im_end|>
                {{ end }}{{ if .Prompt }}<|im_start|>user
                {{ .Prompt }}<|im_end|>
                {{ end }}<|im_start|>assistant
                {{ .Response }}<|im_end|>
                {{- end -}}""";

        assertThat(OllamaShow.prefill(chatMlLike, null)).isFalse();
    }

    /** Ollama cuts a legacy template's last exchange after {@code .Response}, appending one where none is. */
    @Test
    void aLegacyTemplateContinues() {
        // The template of the /api/show example in ollama's docs/api.md.
        String llama3Legacy = "{{ if .System }}<|start_header_id|>system<|end_header_id|>\n\n{{ .System }}<|eot_id|>"
                + "{{ end }}{{ if .Prompt }}<|start_header_id|>user<|end_header_id|>\n\n{{ .Prompt }}<|eot_id|>"
                + "{{ end }}<|start_header_id|>assistant<|end_header_id|>\n\n{{ .Response }}<|eot_id|>";
        assertThat(OllamaShow.prefill(llama3Legacy, null)).isTrue();
        // "mistral assistant" in TestExecuteWithMessages, template/template_test.go: both render
        // "... [/INST] My name is Ollama and I" for a chat ending with that assistant text.
        assertThat(OllamaShow.prefill("[INST] {{ .Prompt }}[/INST] {{ .Response }}", null)).isTrue();
        assertThat(OllamaShow.prefill("[INST] {{ .Prompt }}[/INST] ", null)).as("no .Response").isTrue();
    }

    /**
     * The same test's messages template leaves the last turn open without {@code $last}; such a
     * template is taken as closing it, the answer that cannot glue a new answer onto a partial one.
     */
    @Test
    void aMessagesTemplateWithoutNotLastIsTakenAsClosingTheTurn() {
        String mistralAssistant = """
                {{- range $i, $m := .Messages }}
                {{- if eq .Role "user" }}[INST] {{ .Content }}[/INST] {{ else if eq .Role "assistant" }}{{ .Content }}{{ end }}
                {{- end }}""";

        assertThat(OllamaShow.prefill(mistralAssistant, null)).isFalse();
    }

    @Test
    void aRendererOrNoTemplateLeavesItUnknown() {
        assertThat(OllamaShow.prefill(Samples.read("ollama-template-qwen3-thinking-test.gotmpl"), "qwen3-coder"))
                .as("a renderer replaces the template").isNull();
        assertThat(OllamaShow.prefill(null, null)).isNull();
        assertThat(OllamaShow.prefill("", "")).isNull();
        assertThat(OllamaShow.prefill("{{ .Prompt }}", null)).as("Ollama's stand-in for no template").isNull();
        assertThat(OllamaShow.prefill("{{ .Prompt }}", "qwen3-coder")).isNull();
    }

    @Test
    void readsTheTemplateAndTheRendererOfAnOllamaShowAnswer() {
        // The modelfile as Model.String (server/images.go) writes it for a model with a renderer.
        String modelfile = "# Modelfile generated by \"ollama show\"\n# To build a new Modelfile based on this, replace"
                + " FROM with:\n# FROM qwen3-coder:30b\n\nFROM /root/.ollama/models/blobs/sha256-0123456789ab\n"
                + "TEMPLATE {{ .Prompt }}\nRENDERER qwen3-coder\nPARSER qwen3-coder\nPARAMETER temperature 0.7\n";
        String withRenderer = JsonNodeFactory.instance.objectNode().put("modelfile", modelfile)
                .put("template", "{{ .Prompt }}").toString();

        assertThat(OllamaShow.read(withRenderer))
                .isEqualTo(new OllamaShow("{{ .Prompt }}", "qwen3-coder"));
        assertThat(OllamaShow.read("{\"template\":\"{{ .Prompt }}\",\"renderer\":\"glm-4.7\"}").renderer())
                .isEqualTo("glm-4.7");
        String chatml = Samples.read("ollama-template-chatml.gotmpl");
        assertThat(OllamaShow.read(JsonNodeFactory.instance.objectNode().put("template", chatml)
                .put("modelfile", "FROM /m\nTEMPLATE \"\"\"" + chatml + "\"\"\"\n").toString()))
                .isEqualTo(new OllamaShow(chatml, null));
        assertThat(OllamaShow.read("[]")).isNull();
        assertThat(OllamaShow.read("not json")).isNull();
        assertThat(OllamaShow.request("llama3:8b")).isEqualTo("{\"model\":\"llama3:8b\"}");
    }

    @Test
    void readsWhatOllamaPsSaysIsLoaded() {
        assertThat(Payloads.ollamaLoaded(Samples.read("ollama-api-ps.json"))).containsExactly(
                new LoadedModel("granite3.3:2b", 2629206853L, 2629206853L, "2025-08-23T15:38:39.2249446+02:00", 4096),
                new LoadedModel("smollm2:1.7b", 3501615104L, 3501615104L, "2025-08-23T15:38:16.054006+02:00", 4096));
        assertThat(Payloads.ollamaLoaded(Samples.read("ollama-api-ps-partial-offload.json")))
                .singleElement().satisfies(m -> {
                    assertThat(m.name()).isEqualTo("mistral:7b");
                    assertThat(m.sizeVram()).isLessThan(m.size()); // part of it offloaded to the CPU
                });
    }

    @Test
    void readsOpenAiStyleModelLists() {
        assertThat(Payloads.openAiModels(Samples.read("vllm-v1-models.json")))
                .containsExactly("TinyLlama/TinyLlama-1.1B-Chat-v1.0");
        assertThat(Payloads.openAiModels(Samples.read("llamacpp-v1-models.json")))
                .containsExactly("../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf");
    }

    @Test
    void readsTgiInfo() {
        String info = Samples.read("tgi-info.json");
        assertThat(Payloads.isTgiInfo(info)).isTrue();
        assertThat(Payloads.tgiModels(info)).containsExactly("mistralai/Mistral-7B-Instruct-v0.1");
    }

    @Test
    void readsVllmLoadWithTheOlderCacheMetricName() {
        assertThat(Payloads.vllmLoad(Samples.read("vllm-metrics-v0.5.txt"))).isEqualTo(new Load(0, 0, 0.0));
        assertThat(Payloads.vllmLoad(Samples.read("vllm-metrics-v0.8-excerpt.txt"))).isEqualTo(new Load(0, 0, 0.0));
    }

    @Test
    void readsVllmLoadWithTheNewerCacheMetricNameAndEngineLabels() {
        assertThat(Payloads.vllmLoad(Samples.read("vllm-metrics-v1-engine-label-excerpt.txt")))
                .isEqualTo(new Load(0, 0, 0.0));
    }

    @Test
    void readsVllmPrefixCacheCountersInBothNamings() {
        assertThat(Payloads.vllmPrefixCache(Samples.read("vllm-metrics-v1-engine-label-excerpt.txt")))
                .isEqualTo(new Payloads.PrefixCounters(0.0, 0.0));
        // 0.10: the v1 queries counter, and hits only under the deprecated gpu_ name in this cut.
        assertThat(Payloads.vllmPrefixCache(Samples.read("vllm-metrics-v0.10-excerpt.txt")))
                .isEqualTo(new Payloads.PrefixCounters(32.0, 0.0));
        assertThat(Payloads.vllmPrefixCache(Samples.read("vllm-metrics-v0.5.txt"))).as("no prefix cache").isNull();
    }

    @Test
    void theHitRateIsTheShareOfTokensFoundSinceTheLastProbe() {
        Payloads.PrefixCounters before = new Payloads.PrefixCounters(100, 40);
        assertThat(new Payloads.PrefixCounters(300, 190).rateSince(before)).isEqualTo(0.75);
        assertThat(new Payloads.PrefixCounters(100, 40).rateSince(before)).as("nothing looked up").isNull();
        assertThat(new Payloads.PrefixCounters(10, 5).rateSince(before)).as("restarted").isNull();
    }

    @Test
    void omitsVllmFiguresTheExpositionLacks() {
        // 0.10's excerpt has the newer cache metric (in scientific notation) but no request counts.
        assertThat(Payloads.vllmLoad(Samples.read("vllm-metrics-v0.10-excerpt.txt")))
                .isEqualTo(new Load(null, null, 9.75010481363281e-06));
    }

    @Test
    void sumsVllmFiguresOverEngines() {
        String metrics = """
                vllm:num_requests_running{engine="0",model_name="m"} 3.0
                vllm:num_requests_running{engine="1",model_name="m"} 2.0
                vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
                vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
                vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
                vllm:gpu_cache_usage_perc{model_name="m"} 0.1
                """;
        assertThat(Payloads.vllmLoad(metrics)).isEqualTo(new Load(5, 7, 0.75));
    }

    @Test
    void readsTgiLoad() {
        assertThat(Payloads.tgiLoad(Samples.read("tgi-metrics-excerpt.txt"))).isEqualTo(new Load(0, 0, null));
    }

    @Test
    void readsLlamaCppLoadFromMetricsOrSlots() {
        assertThat(Payloads.llamaCppLoad(Samples.read("llamacpp-metrics-requests-excerpt.txt")))
                .isEqualTo(new Load(0, 0, null));
        assertThat(Payloads.llamaCppLoad(Samples.read("llamacpp-metrics-full-unattributed.txt")))
                .isEqualTo(new Load(0, 0, null));
        // The README's two-slot example has both slots processing.
        assertThat(Payloads.llamaCppSlotsLoad(Samples.read("llamacpp-slots.json"))).isEqualTo(new Load(2, null, null));
    }

    /**
     * llama.cpp's prompt counters as real servers print them: the excerpt from ggml-org/llama.cpp PR
     * #13196 and the full dump, whose {@code prompt_tokens_seconds} gauge (514.037) is its counters'
     * quotient, 18292 / 35.585.
     */
    @Test
    void readsLlamaCppsPrefillCounters() {
        assertThat(Payloads.llamaCppPrefill(PrometheusText.parse(Samples.read("llamacpp-metrics-throughput-excerpt.txt"))))
                .isEqualTo(new Payloads.PrefillCounters(143, 8.168));
        Payloads.PrefillCounters full = Payloads.llamaCppPrefill(
                PrometheusText.parse(Samples.read("llamacpp-metrics-full-unattributed.txt")));
        assertThat(full).isEqualTo(new Payloads.PrefillCounters(18292, 35.585));
        assertThat(full.tokens() / full.seconds()).isCloseTo(514.037, within(0.001));
        assertThat(Payloads.llamaCppPrefill(PrometheusText.parse(Samples.read("llamacpp-metrics-requests-excerpt.txt"))))
                .as("a server without the counters").isNull();
        assertThat(Payloads.llamaCppPrefill(PrometheusText.parse(Samples.read("vllm-metrics-v0.5.txt"))))
                .as("vLLM's prompt_tokens_total is not llama.cpp's").isNull();
    }

    @Test
    void toleratesGarbage() {
        assertThat(Payloads.ollamaModels("not json")).isEmpty();
        assertThat(Payloads.openAiModels("{\"data\": 5}")).isEmpty();
        assertThat(Payloads.tgiModels("[]")).isEmpty();
        assertThat(Payloads.vllmLoad("<html>oops</html>")).isEqualTo(Load.UNKNOWN);
        assertThat(Payloads.llamaCppSlotsLoad("{}")).isEqualTo(Load.UNKNOWN);
        assertThat(Payloads.isOllamaVersion("")).isFalse();
    }

    @Test
    void dropsModelNamesTheContractWouldReject() {
        String tooLong = "m".repeat(300);
        assertThat(Payloads.openAiModels("{\"data\":[{\"id\":\"ok\"},{\"id\":\"" + tooLong + "\"},{\"id\":\"\"}]}"))
                .containsExactly("ok");
    }
}
