package io.heartgate.sim;

/**
 * Renders the node's load and counters in the Prometheus text format, under vLLM's own metric names so
 * that dashboards and scrapers built for vLLM read the simulator unchanged. Written by hand rather than
 * through a metrics library: the point is vLLM's exact names ("vllm:" prefix, model_name and engine
 * labels), which libraries rename.
 */
final class PrometheusText {

    /** The content type of Prometheus text format 0.0.4. */
    static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final SimEngine engine;
    private final SimStats stats;

    PrometheusText(SimEngine engine, SimStats stats) {
        this.engine = engine;
        this.stats = stats;
    }

    /** Returns every metric as of now; call it on the engine's thread. */
    String render() {
        String labels = "{engine=\"0\",model_name=\"" + escape(engine.defaultModel()) + "\"}";
        StringBuilder sb = new StringBuilder(2048);
        gauge(sb, "vllm:num_requests_running", "Number of requests in model execution batches.", labels,
                engine.running());
        gauge(sb, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels,
                engine.waiting());
        gauge(sb, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels,
                (double) engine.running() / engine.maxConcurrency());
        PrefixCache prefix = engine.prefixCache();
        labelledCounter(sb, "vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
                labels, prefix.queriedTokens());
        labelledCounter(sb, "vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
                labels, prefix.hitTokens());
        sb.append("# HELP sim_requests_total Requests received, by endpoint.\n");
        sb.append("# TYPE sim_requests_total counter\n");
        stats.requests().forEach((endpoint, n) ->
                sb.append("sim_requests_total{endpoint=\"").append(escape(endpoint)).append("\"} ")
                        .append(n).append('\n'));
        counter(sb, "sim_cancelled_streams_total", "Generations stopped because the client went away.",
                stats.cancelledStreams.sum());
        counter(sb, "sim_dropped_connections_total", "Connections cut by the dropAfterTokens fault.",
                stats.droppedConnections.sum());
        counter(sb, "sim_tokens_sent_total", "Tokens generated and sent.", stats.tokensSent.sum());
        counter(sb, "sim_usage_prompt_tokens_total", "Prompt tokens reported in answers' usage figures.",
                stats.usagePromptTokens.sum());
        counter(sb, "sim_usage_completion_tokens_total", "Completion tokens reported in answers' usage figures.",
                stats.usageCompletionTokens.sum());
        counter(sb, "sim_completed_requests_total", "Generations that ran to the end.", stats.completed.sum());
        counter(sb, "sim_continued_answers_total", "Generations that continue a partial answer.",
                stats.continued.sum());
        counter(sb, "sim_injected_errors_total", "Requests answered with an injected error status.",
                stats.injectedErrors.sum());
        counter(sb, "sim_model_loads_total", "Models loaded into memory on demand.", stats.modelLoads.sum());
        counter(sb, "sim_model_evictions_total", "Models evicted from memory to make room for another.",
                stats.modelEvictions.sum());
        gauge(sb, "sim_models_loaded", "Models in memory now.", "", engine.loadedModels().size());
        counter(sb, "sim_rejected_busy_total", "Requests refused because the wait queue was full.",
                stats.rejectedBusy.sum());
        return sb.toString();
    }

    private static void gauge(StringBuilder sb, String name, String help, String labels, double value) {
        head(sb, name, help, "gauge").append(name).append(labels).append(' ').append(value).append('\n');
    }

    private static void labelledCounter(StringBuilder sb, String name, String help, String labels, long value) {
        head(sb, name, help, "counter").append(name).append(labels).append(' ').append(value).append(".0\n");
    }

    private static void counter(StringBuilder sb, String name, String help, long value) {
        head(sb, name, help, "counter").append(name).append(' ').append(value).append('\n');
    }

    private static StringBuilder head(StringBuilder sb, String name, String help, String type) {
        return sb.append("# HELP ").append(name).append(' ').append(help).append('\n')
                .append("# TYPE ").append(name).append(' ').append(type).append('\n');
    }

    private static String escape(String labelValue) {
        return labelValue.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }
}
