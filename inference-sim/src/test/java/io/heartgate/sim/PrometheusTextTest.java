package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class PrometheusTextTest {

    private static final TokenSink SILENT = new TokenSink() {
        @Override
        public void token(Generation g, String token) {
        }

        @Override
        public void finish(Generation g) {
        }

        @Override
        public void cut(Generation g) {
        }
    };

    @Test
    void rendersLoadUnderVllmNamesAndTheSimulatorsCounters() {
        ManualTimers timers = new ManualTimers();
        SimStats stats = new SimStats();
        SimConfig config = new SimConfigBuilder("gpu-p", List.of("org/\"model\"", "other"))
                .timing(4, Duration.ofMillis(10), Duration.ofMillis(10))
                .concurrency(4, 8)
                .build();
        SimEngine engine = new SimEngine(config, () -> Faults.NONE, timers::nanos, timers, stats);
        engine.admit(engine.open("other", Integer.MAX_VALUE, SILENT));
        stats.request("openai.chat");
        stats.request("ollama.chat");
        stats.request("openai.chat");
        stats.rejectedBusy.increment();

        String text = new PrometheusText(engine, stats).render();

        String labels = "{engine=\"0\",model_name=\"org/\\\"model\\\"\"}";
        assertThat(text).isEqualTo(String.join("\n",
                "# HELP vllm:num_requests_running Number of requests in model execution batches.",
                "# TYPE vllm:num_requests_running gauge",
                "vllm:num_requests_running" + labels + " 1.0",
                "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
                "# TYPE vllm:num_requests_waiting gauge",
                "vllm:num_requests_waiting" + labels + " 0.0",
                "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
                "# TYPE vllm:kv_cache_usage_perc gauge",
                "vllm:kv_cache_usage_perc" + labels + " 0.25",
                "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.",
                "# TYPE vllm:prefix_cache_queries_total counter",
                "vllm:prefix_cache_queries_total" + labels + " 0.0",
                "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.",
                "# TYPE vllm:prefix_cache_hits_total counter",
                "vllm:prefix_cache_hits_total" + labels + " 0.0",
                "# HELP sim_requests_total Requests received, by endpoint.",
                "# TYPE sim_requests_total counter",
                "sim_requests_total{endpoint=\"ollama.chat\"} 1",
                "sim_requests_total{endpoint=\"openai.chat\"} 2",
                "# HELP sim_cancelled_streams_total Generations stopped because the client went away.",
                "# TYPE sim_cancelled_streams_total counter",
                "sim_cancelled_streams_total 0",
                "# HELP sim_dropped_connections_total Connections cut by the dropAfterTokens fault.",
                "# TYPE sim_dropped_connections_total counter",
                "sim_dropped_connections_total 0",
                "# HELP sim_tokens_sent_total Tokens generated and sent.",
                "# TYPE sim_tokens_sent_total counter",
                "sim_tokens_sent_total 0",
                "# HELP sim_usage_prompt_tokens_total Prompt tokens reported in answers' usage figures.",
                "# TYPE sim_usage_prompt_tokens_total counter",
                "sim_usage_prompt_tokens_total 0",
                "# HELP sim_usage_completion_tokens_total Completion tokens reported in answers' usage figures.",
                "# TYPE sim_usage_completion_tokens_total counter",
                "sim_usage_completion_tokens_total 0",
                "# HELP sim_completed_requests_total Generations that ran to the end.",
                "# TYPE sim_completed_requests_total counter",
                "sim_completed_requests_total 0",
                "# HELP sim_continued_answers_total Generations that continue a partial answer.",
                "# TYPE sim_continued_answers_total counter",
                "sim_continued_answers_total 0",
                "# HELP sim_injected_errors_total Requests answered with an injected error status.",
                "# TYPE sim_injected_errors_total counter",
                "sim_injected_errors_total 0",
                "# HELP sim_model_loads_total Models loaded into memory on demand.",
                "# TYPE sim_model_loads_total counter",
                "sim_model_loads_total 0",
                "# HELP sim_model_evictions_total Models evicted from memory to make room for another.",
                "# TYPE sim_model_evictions_total counter",
                "sim_model_evictions_total 0",
                "# HELP sim_models_loaded Models in memory now.",
                "# TYPE sim_models_loaded gauge",
                "sim_models_loaded 2.0",
                "# HELP sim_rejected_busy_total Requests refused because the wait queue was full.",
                "# TYPE sim_rejected_busy_total counter",
                "sim_rejected_busy_total 1",
                ""));
    }
}
