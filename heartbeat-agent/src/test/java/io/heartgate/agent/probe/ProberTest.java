package io.heartgate.agent.probe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.heartgate.agent.Samples;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.testkit.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProberTest {

    private static final String SMOLLM2_DIGEST = "cef4a1e09247f018ca0c482ad4c2ce1474aba5e87f245dacf97f07948d05d8b4";

    private final FakeServer server = new FakeServer();
    private final MutableClock clock = new MutableClock();

    private FakeServer ollama() {
        return server.route("/api/version", 200, Samples.read("ollama-api-version.json"))
                .route("/api/tags", 200, Samples.read("ollama-api-tags.json"))
                .route("/api/ps", 200, Samples.read("ollama-api-ps.json"));
    }

    private FakeServer vllm() {
        return server.route("/health", 200, "")
                .route("/v1/models", 200, Samples.read("vllm-v1-models.json"))
                .route("/metrics", 200, Samples.read("vllm-metrics-v0.5.txt"));
    }

    private FakeServer tgi() {
        return server.route("/health", 200, "")
                .route("/info", 200, Samples.read("tgi-info.json"))
                .route("/metrics", 200, Samples.read("tgi-metrics-excerpt.txt"));
    }

    private FakeServer llamaCpp() {
        return server.route("/health", 200, Samples.read("llamacpp-health-ok.json"))
                .route("/v1/models", 200, Samples.read("llamacpp-v1-models.json"))
                .route("/metrics", 200, Samples.read("llamacpp-metrics-full-unattributed.txt"));
    }

    @Test
    void detectsAndProbesOllama() {
        ProbeResult r = new Prober(Backend.AUTO, ollama(), "n").probe();

        assertThat(r.healthy()).isTrue();
        assertThat(r.backend()).isEqualTo(Backend.OLLAMA);
        assertThat(r.models()).hasSize(7).contains("granite3.3:2b", "smollm2:1.7b");
        assertThat(r.load()).isEqualTo(Load.UNKNOWN);
        assertThat(r.modelInfo()).hasSize(7).allSatisfy(m -> assertThat(m.digest()).hasSize(64));
        assertThat(r.loaded()).extracting(LoadedModel::name)
                .containsExactly("granite3.3:2b", "smollm2:1.7b");
    }

    @Test
    void readsLlamaCppsCapacityFromItsSlots() {
        ProbeResult r = new Prober(Backend.AUTO, llamaCpp().route("/slots", 200, Samples.read("llamacpp-slots.json")), "n")
                .probe();

        assertThat(r.capacity()).isEqualTo(2);
        assertThat(new Prober(Backend.AUTO, ollama(), "o").probe().capacity()).as("Ollama does not say").isNull();
    }

    @Test
    void aFailedPsReadKeepsTheLoadedModelsLastRead() {
        Prober prober = new Prober(Backend.AUTO, ollama(), "n");
        prober.probe();
        server.route("/api/ps", 500, "{\"error\":\"busy\"}");

        ProbeResult r = prober.probe();

        assertThat(r.healthy()).isTrue();
        assertThat(r.loaded()).extracting(LoadedModel::name)
                .containsExactly("granite3.3:2b", "smollm2:1.7b");
        server.route("/api/ps", 200, "{\"models\":[]}");
        assertThat(prober.probe().loaded()).as("a read that says none").isEmpty();
    }

    @Test
    void aBackendOtherThanOllamaReportsNamesOnly() {
        ProbeResult r = new Prober(Backend.AUTO, vllm(), "n").probe();
        assertThat(r.modelInfo()).isEmpty();
        assertThat(r.loaded()).isEmpty();
        assertThat(server.takeShown()).isEmpty();
    }

    /** An {@code /api/show} answer with {@code template}, and {@code renderer} when not null. */
    private static String showAnswer(String template, String renderer) {
        ObjectNode show = JsonNodeFactory.instance.objectNode().put("template", template);
        if (renderer != null) {
            show.put("renderer", renderer);
        }
        return show.put("modified_at", "2025-08-03T21:20:02.9178974+02:00").toString();
    }

    private static Map<String, Boolean> prefillByName(ProbeResult r) {
        Map<String, Boolean> out = new HashMap<>();
        r.modelInfo().forEach(m -> out.put(m.name(), m.prefill()));
        return out;
    }

    @Test
    void asksOllamaAboutTwoModelsAProbeAndReportsWhetherEachContinuesAFinalAssistantMessage() {
        String continuing = Samples.read("ollama-template-qwen3-thinking-test.gotmpl");
        String closing = Samples.read("ollama-template-chatml.gotmpl");
        ollama().show("smollm2:1.7b", 200, showAnswer(continuing, null))
                .show("mistral:7b", 200, showAnswer(closing, null))
                .show("granite3.3:2b", 200, showAnswer("{{ .Prompt }}", "granite"))
                .show("gemma3n:e2b", 200, showAnswer(Samples.read("ollama-template-gemma3-instruct.gotmpl"), null))
                .show("hf.co/bartowski/Ministral-8B-Instruct-2410-GGUF:IQ4_XS", 200,
                        showAnswer("[INST] {{ .Prompt }}[/INST] {{ .Response }}", null))
                .show("dolphin3:8b", 200, showAnswer(closing, null))
                .show("qwen3:8b", 200, showAnswer(continuing, null));
        Prober prober = new Prober(Backend.OLLAMA, server, "n", clock);

        ProbeResult first = prober.probe();

        assertThat(server.takeShown()).containsExactly("smollm2:1.7b", "mistral:7b");
        assertThat(first.modelInfo()).extracting(ModelInfo::prefill)
                .containsExactly(true, false, null, null, null, null, null);
        assertThat(first.modelInfo().get(0)).isEqualTo(Payloads.ollamaModelInfo(Samples.read("ollama-api-tags.json"))
                .get(0).withPrefill(true));
        prober.probe();
        assertThat(server.takeShown()).containsExactly("granite3.3:2b", "gemma3n:e2b");
        prober.probe();
        prober.probe();
        assertThat(server.takeShown()).containsExactly("hf.co/bartowski/Ministral-8B-Instruct-2410-GGUF:IQ4_XS",
                "dolphin3:8b", "qwen3:8b");

        ProbeResult known = prober.probe();

        assertThat(server.takeShown()).as("each name and digest is asked once").isEmpty();
        assertThat(known.modelInfo()).extracting(ModelInfo::prefill)
                .containsExactly(true, false, null, false, true, false, true);
    }

    @Test
    void aModelWhoseDigestChangesIsUnknownUntilAskedAgain() {
        String continuing = showAnswer(Samples.read("ollama-template-qwen3-thinking-test.gotmpl"), null);
        ollama().show("smollm2:1.7b", 200, continuing);
        Prober prober = new Prober(Backend.OLLAMA, server, "n", clock);
        for (int i = 0; i < 4; i++) {
            prober.probe();
        }
        server.takeShown();
        String tags = Samples.read("ollama-api-tags.json");
        server.route("/api/tags", 200, tags.replace(SMOLLM2_DIGEST, "0".repeat(64)))
                .show("smollm2:1.7b", 200, showAnswer(Samples.read("ollama-template-chatml.gotmpl"), null));

        assertThat(prefillByName(prober.probe())).containsEntry("smollm2:1.7b", false);
        assertThat(server.takeShown()).containsExactly("smollm2:1.7b");

        server.route("/api/tags", 200, "{\"models\":[]}");
        prober.probe();
        server.route("/api/tags", 200, tags).show("smollm2:1.7b", 200, continuing);
        assertThat(prefillByName(prober.probe())).as("a model that left and came back is asked again")
                .containsEntry("smollm2:1.7b", true);
        assertThat(server.takeShown()).startsWith("smollm2:1.7b");
    }

    @Test
    void aModelWhoseShowFailsIsAskedAgainAMinuteLaterAtTheSoonest() {
        String tags = "{\"models\":[{\"name\":\"a:1b\",\"digest\":\"d1\"}]}";
        server.route("/api/version", 200, Samples.read("ollama-api-version.json")).route("/api/tags", 200, tags)
                .show("a:1b", 500, "{\"error\":\"busy\"}");
        Prober prober = new Prober(Backend.OLLAMA, server, "n", clock);

        assertThat(prober.probe().modelInfo()).singleElement().satisfies(m -> assertThat(m.prefill()).isNull());
        clock.advance(Prober.SHOW_RETRY.minusSeconds(1));
        prober.probe();
        assertThat(server.takeShown()).containsExactly("a:1b");

        server.show("a:1b", 200, "not a show answer");
        clock.advance(Duration.ofSeconds(1));
        assertThat(prober.probe().modelInfo().get(0).prefill()).isNull();
        assertThat(server.takeShown()).containsExactly("a:1b");

        server.show("a:1b", 200, showAnswer(Samples.read("ollama-template-chatml.gotmpl"), null));
        clock.advance(Prober.SHOW_RETRY);
        assertThat(prober.probe().modelInfo().get(0).prefill()).isFalse();
        assertThat(server.takeShown()).containsExactly("a:1b");
    }

    @Test
    void aShowThatCannotReachTheServerEndsThatProbesShowsAndIsRetriedAMinuteLater() {
        ollama().unreachable("/api/show", true);
        Prober prober = new Prober(Backend.OLLAMA, server, "n", clock);

        ProbeResult r = prober.probe();

        assertThat(r.healthy()).isTrue();
        assertThat(r.models()).hasSize(7);
        assertThat(r.modelInfo()).hasSize(7).allSatisfy(m -> assertThat(m.prefill()).isNull());
        assertThat(server.takeShown()).containsExactly("smollm2:1.7b");
        prober.probe();
        assertThat(server.takeShown()).as("the next model, not the one that failed").containsExactly("mistral:7b");
    }

    @Test
    void showIsDueForANewNameOrDigestAndAMinuteAfterAFailure() {
        Instant now = Instant.parse("2026-11-30T16:00:00Z");

        assertThat(Prober.showDue(null, "d", now)).isTrue();
        assertThat(Prober.showDue(new Prober.Shown("d", true, null), "d", now)).isFalse();
        assertThat(Prober.showDue(new Prober.Shown("d", null, null), "d", now)).as("answered: unknown").isFalse();
        assertThat(Prober.showDue(new Prober.Shown("d", true, null), "e", now)).isTrue();
        assertThat(Prober.showDue(new Prober.Shown(null, true, null), null, now)).isFalse();
        assertThat(Prober.showDue(new Prober.Shown("d", null, now.minusSeconds(59)), "d", now)).isFalse();
        assertThat(Prober.showDue(new Prober.Shown("d", null, now.minusSeconds(60)), "d", now)).isTrue();
    }

    @Test
    void detectsAndProbesVllm() {
        ProbeResult r = new Prober(Backend.AUTO, vllm(), "n").probe();

        assertThat(r.backend()).isEqualTo(Backend.VLLM);
        assertThat(r.models()).containsExactly("TinyLlama/TinyLlama-1.1B-Chat-v1.0");
        assertThat(r.capacity()).as("vLLM's metrics do not say").isNull();
        assertThat(r.load()).isEqualTo(new Load(0, 0, 0.0));
    }

    @Test
    void vllmsPrefixCacheHitRateIsCarriedFromTheSecondProbe() {
        String v1 = Samples.read("vllm-metrics-v1-engine-label-excerpt.txt");
        server.route("/health", 200, "").route("/v1/models", 200, Samples.read("vllm-v1-models.json"))
                .route("/metrics", 200, v1);
        Prober prober = new Prober(Backend.VLLM, server, "n");
        assertThat(prober.probe().load().prefixCacheHitRate()).as("no earlier counters").isNull();
        // The same exposition, later: 400 tokens looked up since, 300 of them found.
        server.route("/metrics", 200, v1
                .replace("vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"llama-vllm-single\"} 0.0",
                        "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"llama-vllm-single\"} 400.0")
                .replace("vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"llama-vllm-single\"} 0.0",
                        "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"llama-vllm-single\"} 300.0"));
        assertThat(prober.probe().load().prefixCacheHitRate()).isEqualTo(0.75);
    }

    @Test
    void detectsAndProbesTgi() {
        ProbeResult r = new Prober(Backend.AUTO, tgi(), "n").probe();

        assertThat(r.backend()).isEqualTo(Backend.TGI);
        assertThat(r.models()).containsExactly("mistralai/Mistral-7B-Instruct-v0.1");
        assertThat(r.capacity()).as("max_concurrent_requests of /info").isEqualTo(128);
        assertThat(r.load()).isEqualTo(new Load(0, 0, null));
    }

    @Test
    void detectsAndProbesLlamaCpp() {
        ProbeResult r = new Prober(Backend.AUTO, llamaCpp(), "n").probe();

        assertThat(r.backend()).isEqualTo(Backend.LLAMACPP);
        assertThat(r.capacity()).as("its slots").isNull(); // this fake server has no /slots
        assertThat(r.load()).isEqualTo(new Load(0, 0, null));
    }

    /**
     * The PR #13196 excerpt at one probe, then the same counters 2048 tokens and 1.024 s of prefill
     * later: 2000 tokens a second, kept while the server is idle, forgotten when it fails its health
     * check or its metrics cannot be read.
     */
    @Test
    void llamaCppsPrefillSpeedIsMeasuredFromTheSecondProbeAndForgottenWhenAProbeFails() {
        String before = Samples.read("llamacpp-metrics-throughput-excerpt.txt");
        String after = before.replace("llamacpp:prompt_tokens_total 143", "llamacpp:prompt_tokens_total 2191")
                .replace("llamacpp:prompt_seconds_total 8.168", "llamacpp:prompt_seconds_total 9.192");
        server.route("/health", 200, Samples.read("llamacpp-health-ok.json"))
                .route("/v1/models", 200, Samples.read("llamacpp-v1-models.json"))
                .route("/metrics", 200, before);
        Prober prober = new Prober(Backend.LLAMACPP, server, "n");

        assertThat(prober.probe().load().prefillTps()).as("no earlier counters").isNull();
        server.route("/metrics", 200, after);
        assertThat(prober.probe().load().prefillTps()).isCloseTo(2000.0, within(1e-6));
        assertThat(prober.probe().load().prefillTps()).as("idle").isCloseTo(2000.0, within(1e-6));

        server.unreachable("/metrics", true);
        assertThat(prober.probe().load()).isEqualTo(Load.UNKNOWN);
        server.unreachable("/metrics", false);
        assertThat(prober.probe().load().prefillTps()).as("measured anew after the gap").isNull();

        server.route("/metrics", 200, before.replace("llamacpp:prompt_tokens_total 143", "llamacpp:prompt_tokens_total 4239")
                .replace("llamacpp:prompt_seconds_total 8.168", "llamacpp:prompt_seconds_total 10.216"));
        assertThat(prober.probe().load().prefillTps()).isCloseTo(2000.0, within(1e-6));
        server.route("/health", 503, Samples.read("llamacpp-health-loading-503.json"));
        assertThat(prober.probe().healthy()).isFalse();
        server.route("/health", 200, Samples.read("llamacpp-health-ok.json"));
        assertThat(prober.probe().load().prefillTps()).as("forgotten while it was down").isNull();
    }

    @Test
    void vllmReportsNoPrefillSpeed() {
        String v1 = Samples.read("vllm-metrics-v1-engine-label-excerpt.txt");
        server.route("/health", 200, "").route("/v1/models", 200, Samples.read("vllm-v1-models.json"))
                .route("/metrics", 200, v1);
        Prober prober = new Prober(Backend.VLLM, server, "n");
        prober.probe();
        String later = v1.replace("vllm:prompt_tokens_total{engine=\"0\",model_name=\"llama-vllm-single\"} 0.0",
                "vllm:prompt_tokens_total{engine=\"0\",model_name=\"llama-vllm-single\"} 4096.0");
        assertThat(later).isNotEqualTo(v1);
        server.route("/metrics", 200, later);

        assertThat(prober.probe().load().prefillTps()).as("its counters give no sound figure").isNull();
    }

    @Test
    void readsTgisBatchSizeWhereSetAndItsAdmissionLimitOtherwise() {
        String info = Samples.read("tgi-info.json");
        assertThat(info).contains("\"max_concurrent_requests\": 128").doesNotContain("max_batch_size");
        assertThat(Payloads.tgiCapacity(info)).as("no max_batch_size: the admission limit").isEqualTo(128);
        String withBatch = info.replace("\"max_waiting_tokens\": 20,", "\"max_waiting_tokens\": 20,\n  \"max_batch_size\": 32,");
        assertThat(Payloads.tgiCapacity(withBatch)).as("the batch, the tighter").isEqualTo(32);
        String nullBatch = info.replace("\"max_waiting_tokens\": 20,", "\"max_waiting_tokens\": 20,\n  \"max_batch_size\": null,");
        assertThat(Payloads.tgiCapacity(nullBatch)).as("TGI's default, null").isEqualTo(128);
        String biggerBatch = info.replace("\"max_waiting_tokens\": 20,", "\"max_waiting_tokens\": 20,\n  \"max_batch_size\": 512,");
        assertThat(Payloads.tgiCapacity(biggerBatch)).as("never above what the router admits").isEqualTo(128);
        assertThat(Payloads.tgiCapacity(info.replace("\"max_concurrent_requests\": 128", "\"max_concurrent_requests\": 0")))
                .isNull();
    }

    @Test
    void forgetsLlamaCppsSlotCountWhenSlotsAreTurnedOffAndReadsPropsInstead() {
        FakeServer llama = llamaCpp().route("/slots", 200, Samples.read("llamacpp-slots.json"));
        Prober prober = new Prober(Backend.LLAMACPP, llama, "n");
        assertThat(prober.probe().capacity()).isEqualTo(2);

        llama.unreachable("/slots", true);
        assertThat(prober.probe().capacity()).as("unreachable for a moment: kept").isEqualTo(2);

        // Restarted with --no-slots: /slots answers 501 and /props, without a slot count here, is all that is left.
        llama.unreachable("/slots", false).route("/slots", 501,
                "{\"error\":{\"code\":501,\"message\":\"This server does not support slots endpoint.\","
                        + "\"type\":\"not_supported_error\"}}")
                .route("/props", 200, "{\"default_generation_settings\":{\"n_ctx\":4096}}");
        assertThat(prober.probe().capacity()).as("the old figure no longer holds").isNull();

        llama.route("/props", 200, "{\"default_generation_settings\":{\"n_ctx\":4096},\"total_slots\":8}");
        assertThat(prober.probe().capacity()).as("/props' total_slots").isEqualTo(8);

        llama.unreachable("/props", true);
        assertThat(prober.probe().capacity()).as("/props unreachable for a moment: kept").isEqualTo(8);
    }

    @Test
    void fallsBackToLlamaCppSlotsWithoutMetrics() {
        server.route("/health", 200, "{\"status\":\"ok\"}")
                .route("/v1/models", 200, Samples.read("llamacpp-v1-models.json"))
                .route("/slots", 200, Samples.read("llamacpp-slots.json"));

        ProbeResult r = new Prober(Backend.LLAMACPP, server, "n").probe();

        assertThat(r.load()).isEqualTo(new Load(2, null, null));
    }

    @Test
    void treatsALoadingLlamaCppAsDown() {
        llamaCpp().route("/health", 503, Samples.read("llamacpp-health-loading-503.json"));

        ProbeResult r = new Prober(Backend.LLAMACPP, server, "n").probe();

        assertThat(r.healthy()).isFalse();
        assertThat(r.detail()).contains("503");
    }

    @Test
    void detectsAPlainOpenAiServer() {
        server.route("/v1/models", 200, Samples.read("vllm-v1-models.json"));

        assertThat(new Prober(Backend.AUTO, server, "n").probe().backend()).isEqualTo(Backend.OPENAI);
    }

    @Test
    void isDownWhileUnreachableAndDetectsWhenItComesUp() {
        Prober prober = new Prober(Backend.AUTO, server.down(true), "n");

        ProbeResult r = prober.probe();
        assertThat(r.healthy()).isFalse();
        assertThat(r.backend()).isNull();
        assertThat(r.detail()).contains("unreachable");

        server.down(false);
        ollama();
        assertThat(prober.probe().healthy()).isTrue();
        assertThat(prober.detected()).isEqualTo(Backend.OLLAMA);
    }

    @Test
    void detectsAgainAfterTheServerWasReplaced() {
        Prober prober = new Prober(Backend.AUTO, ollama(), "n");
        assertThat(prober.probe().backend()).isEqualTo(Backend.OLLAMA);

        server.clear().down(true);
        ProbeResult down = prober.probe();
        assertThat(down.healthy()).isFalse();
        assertThat(down.models()).as("last known models are kept").hasSize(7);

        server.down(false);
        vllm();
        ProbeResult back = prober.probe();
        assertThat(back.backend()).isEqualTo(Backend.VLLM);
        assertThat(back.models()).containsExactly("TinyLlama/TinyLlama-1.1B-Chat-v1.0");
    }

    @Test
    void aServerReplacedByOneThatDoesNotSayItsCapacityReportsNone() {
        Prober prober = new Prober(Backend.AUTO, tgi(), "n");
        assertThat(prober.probe().capacity()).isEqualTo(128);

        server.clear().down(true);
        prober.probe();
        server.down(false);
        vllm();
        ProbeResult back = prober.probe();
        assertThat(back.backend()).isEqualTo(Backend.VLLM);
        assertThat(back.capacity()).as("TGI's figure is not vLLM's").isNull();
    }

    @Test
    void keepsTheLastModelsWhenOnlyTheModelFetchFails() {
        Prober prober = new Prober(Backend.VLLM, vllm(), "n");
        prober.probe();

        server.route("/v1/models", 500, "boom").route("/metrics", 500, "boom");
        ProbeResult r = prober.probe();

        assertThat(r.healthy()).isTrue();
        assertThat(r.models()).containsExactly("TinyLlama/TinyLlama-1.1B-Chat-v1.0");
        assertThat(r.load()).isEqualTo(Load.UNKNOWN);
    }

    @Test
    void usesTheConfiguredBackendsHealthCheck() {
        server.route("/api/version", 500, "").route("/health", 200, "");

        assertThat(new Prober(Backend.OLLAMA, server, "n").probe().healthy()).isFalse();
        assertThat(new Prober(Backend.TGI, server, "n").probe().healthy()).isTrue();
    }
}
