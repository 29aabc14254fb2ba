package io.heartgate.agent.probe;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.agent.Samples;
import org.junit.jupiter.api.Test;

class PrometheusTextTest {

    @Test
    void readsSamplesWithAndWithoutLabelsTimestampsAndComments() {
        PrometheusText p = PrometheusText.parse("""
                # HELP a_total things
                # TYPE a_total counter
                a_total 3
                b{x="1",y="with space"} 2.5 1700000000000
                b{x="2",le="+Inf"} 1.5
                c\t7
                d NaN
                broken{ 1
                e notanumber
                """);

        assertThat(p.sum("a_total")).hasValue(3.0);
        assertThat(p.sum("b")).hasValue(4.0);
        assertThat(p.max("b")).hasValue(2.5);
        assertThat(p.sum("c")).hasValue(7.0);
        assertThat(p.sum("d")).isEmpty();
        assertThat(p.sum("e")).isEmpty();
        assertThat(p.has("missing")).isFalse();
    }

    @Test
    void readsARealVllmDump() {
        PrometheusText p = PrometheusText.parse(Samples.read("vllm-metrics-v0.5.txt"));

        assertThat(p.has("vllm:num_requests_running")).isTrue();
        assertThat(p.sum("vllm:gpu_cache_usage_perc")).isPresent();
    }

    @Test
    void readsTgiBlankLinesBetweenFamilies() {
        PrometheusText p = PrometheusText.parse(Samples.read("tgi-metrics-excerpt.txt"));

        assertThat(p.sum("tgi_request_count")).hasValue(111.0);
        assertThat(p.sum("tgi_batch_inference_success")).hasValue(1525.0);
    }
}
